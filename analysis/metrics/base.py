"""What a metric is (tag, unit, direction) and the statistics every metric module shares."""

from __future__ import annotations

from dataclasses import dataclass, field
from math import comb, erfc, sqrt
from typing import Literal

import numpy as np
import pandas as pd

PERCENTILES = (50, 90, 95, 99)
DISTRIBUTION_STATS = ("mean", "p50", "p90", "p95", "p99", "std", "min", "max", "count")
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0


Better = Literal["higher", "lower"]


@dataclass(frozen=True)
class Metric:
    """One definition. `key` is the summary column (or column prefix for distributions)."""

    key: str
    header: str
    unit: str
    description: str
    aliases: str = ""  # the same quantity's name in aiperf / vLLM benchmark output
    distribution: bool = False  # summarised as mean/p50/p90/p95/p99/std/min/max/count
    column: str = ""  # its name in a report table when not "header (unit)"
    # which way is better, said by every definition; None: neither (a setting, a count)
    better: Better | None = field(kw_only=True)
    # its name where space is short (the terminal's table), when not `column` or `header`
    short_header: str = field(default="", kw_only=True)

    def __post_init__(self) -> None:
        if self.better not in ("higher", "lower", None):
            raise ValueError(f"{self.key}: better must be 'higher', 'lower' or None")

    @property
    def larger_is_better(self) -> bool | None:
        """`better` as the comparison's sign (summary.json's `larger_is_better`)."""
        return None if self.better is None else self.better == "higher"

    @property
    def label(self) -> str:
        """How a report table names the figure: `column`, else "header (unit)"."""
        return self.column or f"{self.header} ({self.unit})"

    @property
    def short(self) -> str:
        """Its name where space is short: `short_header`, else `column`, else `header`."""
        return self.short_header or self.column or self.header

    def stat_label(self, stat: str) -> str:
        """How a table names one statistic of it (`mean`, `p50`, …): "short stat (unit)"."""
        return f"{self.short} {stat} ({self.unit})"


def distribution(values: np.ndarray) -> dict[str, float]:
    """mean, percentiles (linear interpolation, as numpy/aiperf), population std, count."""
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    if v.size == 0:
        return {s: (0.0 if s == "count" else np.nan) for s in DISTRIBUTION_STATS}
    p = np.percentile(v, PERCENTILES)
    return {
        "mean": float(v.mean()), "p50": float(p[0]), "p90": float(p[1]), "p95": float(p[2]),
        "p99": float(p[3]), "std": float(v.std()), "min": float(v.min()),
        "max": float(v.max()), "count": float(v.size),
    }


def bootstrap_mean_ci(values: np.ndarray, level: float = 0.95,
                      resamples: int = BOOTSTRAP_RESAMPLES,
                      seed: int = BOOTSTRAP_SEED) -> tuple[float, float, float]:
    """(mean, low, high): percentile bootstrap of the mean treating every value as independent.

    Right for one value per scenario; for repeated trials of a scenario use
    `cluster_bootstrap_mean_ci`. Fewer than two values: no interval (NaN, NaN)."""
    v = np.asarray(values, dtype=float)
    keep = ~np.isnan(v)
    return cluster_bootstrap_mean_ci(v[keep], np.arange(int(keep.sum())), level, resamples,
                                     seed)


_SMALL = 256  # clusters of at most this many values are labelled without pandas


def _clusters(values: np.ndarray, clusters: np.ndarray,
              labelled: dict[bytes, tuple[np.ndarray, dict[object, int]]] | None = None
              ) -> tuple[np.ndarray, np.ndarray, dict[object, int]]:
    """Per-cluster sum and count of the non-NaN values, and each cluster label's position.
    `labelled`: the codes already found for these `clusters`, by which values are kept (the
    values of one set of clusters, labelled once)."""
    v = np.asarray(values, dtype=float)
    keep = ~np.isnan(v)
    known = labelled.get(keep.tobytes()) if labelled is not None else None
    if known is None:
        kept = np.asarray(clusters)[keep]
        if len(kept) <= _SMALL:  # pandas' fixed cost per call is most of a small one's time
            first: dict[object, int] = {}
            codes = np.fromiter((first.setdefault(c, len(first)) for c in kept.tolist()),
                                dtype=np.intp, count=len(kept))
            labels = list(first)
        else:
            codes, labels = pd.factorize(pd.Series(kept), sort=False)
        known = codes, {label: i for i, label in enumerate(labels)}
        if labelled is not None:
            labelled[keep.tobytes()] = known
    codes, ids = known
    n = len(ids)
    return (np.bincount(codes, weights=v[keep], minlength=n),
            np.bincount(codes, minlength=n).astype(float), ids)


def _draws(n_clusters: int, resamples: int, rng: np.random.Generator):
    """Cluster indices drawn with replacement, in chunks so memory stays bounded."""
    chunk = max(1, min(resamples, 4_000_000 // max(1, n_clusters)))
    for start in range(0, resamples, chunk):
        yield rng.integers(0, n_clusters, size=(min(resamples, start + chunk) - start,
                                                 n_clusters))


def cluster_bootstrap_mean_ci(values: np.ndarray, clusters: np.ndarray, level: float = 0.95,
                              resamples: int = BOOTSTRAP_RESAMPLES,
                              seed: int = BOOTSTRAP_SEED) -> tuple[float, float, float]:
    """(mean, low, high): the mean over all values, with a percentile bootstrap that resamples
    whole clusters (here: scenarios, all their repeated trials together).

    Repeats of one scenario are correlated, so resampling trials as if independent gives an
    interval too narrow by up to √k; resampling scenarios keeps that correlation. With one
    value per cluster it is the plain bootstrap. Fewer than two clusters: (mean, NaN, NaN),
    never a zero-width interval. Seeded, so a report is repeatable."""
    sums, counts, _ = _clusters(values, clusters)
    if counts.size == 0:
        return np.nan, np.nan, np.nan
    mean = float(sums.sum() / counts.sum())
    if counts.size < 2:
        return mean, np.nan, np.nan
    rng = np.random.default_rng(seed)
    means = np.concatenate([sums[idx].sum(axis=1) / counts[idx].sum(axis=1)
                            for idx in _draws(counts.size, resamples, rng)])
    return (mean, *_percentile_interval(means, level))


def paired_cluster_bootstrap_diff_ci(
        base: np.ndarray, base_clusters: np.ndarray, other: np.ndarray,
        other_clusters: np.ndarray, level: float = 0.95, resamples: int = BOOTSTRAP_RESAMPLES,
        seed: int = BOOTSTRAP_SEED) -> tuple[float, float, float, int, float]:
    """(difference other − base, low, high, clusters paired, p) of the two means, over the
    clusters (scenarios) both sides have. Each resample draws one set of scenarios and takes
    both runs' trials of them, so what the scenarios share (their difficulty) cancels out.
    With one value per cluster (per-scenario means) every scenario weighs the same.
    p: two-sided, from the bootstrap standard error (`bootstrap_p`). Fewer than two paired
    clusters: no interval, p NaN."""
    return paired_cluster_bootstrap_diff_cis(base, base_clusters, [other], other_clusters,
                                             level, resamples, seed)[0]


def paired_cluster_bootstrap_diff_cis(
        base: np.ndarray, base_clusters: np.ndarray, others: list[np.ndarray],
        other_clusters: np.ndarray, level: float = 0.95, resamples: int = BOOTSTRAP_RESAMPLES,
        seed: int = BOOTSTRAP_SEED) -> list[tuple[float, float, float, int, float]]:
    """`paired_cluster_bootstrap_diff_ci` of one base against each of `others` (values of the
    same `other_clusters`), each exactly what it returns alone: the others that pair the same
    clusters share its draws (the same seed draws the same scenarios), so the clusters are
    labelled, drawn and the base resampled once for all of them (`analysis.metrics.power`
    asks for one pair at several sizes of a difference)."""
    b_sums, b_counts, b_ids = _clusters(base, base_clusters)
    labelled: dict[bytes, tuple[np.ndarray, dict[object, int]]] = {}
    found: list[tuple[float, float, float, int, float]] = [(np.nan,) * 5] * len(others)
    sides: dict[tuple, list[tuple[int, float, np.ndarray, np.ndarray]]] = {}
    for k, other in enumerate(others):
        o_sums, o_counts, o_ids = _clusters(other, other_clusters, labelled)
        common = tuple(c for c in b_ids if c in o_ids)
        if not common:
            found[k] = (np.nan, np.nan, np.nan, 0, np.nan)
            continue
        bi = np.array([b_ids[c] for c in common])
        oi = np.array([o_ids[c] for c in common])
        diff = float(o_sums[oi].sum() / o_counts[oi].sum()
                     - b_sums[bi].sum() / b_counts[bi].sum())
        if len(common) < 2:
            found[k] = (diff, np.nan, np.nan, len(common), np.nan)
        else:
            sides.setdefault(common, []).append((k, diff, o_sums[oi], o_counts[oi]))
    for common, paired in sides.items():
        bi = np.array([b_ids[c] for c in common])
        sums, counts = b_sums[bi], b_counts[bi]
        parts: list[list[np.ndarray]] = [[] for _ in paired]
        for idx in _draws(len(common), resamples, np.random.default_rng(seed)):
            base_means = sums[idx].sum(axis=1) / counts[idx].sum(axis=1)
            for part, (_, _, o_sums, o_counts) in zip(parts, paired, strict=True):
                part.append(o_sums[idx].sum(axis=1) / o_counts[idx].sum(axis=1) - base_means)
        for part, (k, diff, _, _) in zip(parts, paired, strict=True):
            diffs = np.concatenate(part)
            found[k] = (diff, *_percentile_interval(diffs, level), len(common),
                        bootstrap_p(diff, diffs))
    return found


def paired_cluster_bootstrap_quantile_diff_ci(
        base: np.ndarray, base_clusters: np.ndarray, other: np.ndarray,
        other_clusters: np.ndarray, qs: tuple[float, ...], level: float = 0.95,
        resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED
) -> list[tuple[float, float, float, int, float]]:
    """As `paired_cluster_bootstrap_diff_ci`, for each q-th percentile in `qs` (numpy's linear
    interpolation) of the values, e.g. p50 and p99 TTFT of the requests of paired scenarios.

    A resample weights each value by how often its scenario was drawn and takes the
    percentile of that replicated sample exactly, without materialising it."""
    b_ids, o_ids = _clusters(base, base_clusters)[2], _clusters(other, other_clusters)[2]
    common = [c for c in b_ids if c in o_ids]
    if not common:
        return [(np.nan, np.nan, np.nan, 0, np.nan)] * len(qs)
    position = pd.Series(np.arange(len(common)), index=pd.Index(common, dtype=object))
    sides = [_sorted_by_value(v, k, position) for v, k in ((base, base_clusters),
                                                           (other, other_clusters))]
    diffs = [float(np.percentile(sides[1][0], q) - np.percentile(sides[0][0], q)) for q in qs]
    if len(common) < 2:
        return [(d, np.nan, np.nan, len(common), np.nan) for d in diffs]
    rng = np.random.default_rng(seed)
    step = max(1, 4_000_000 // max(len(v) for v, _ in sides))
    boot: list[np.ndarray] = []
    for idx in _draws(len(common), resamples, rng):
        for start in range(0, len(idx), step):
            part = idx[start:start + step]
            drawn = np.zeros((len(part), len(common)), dtype=np.int32)
            np.add.at(drawn, (np.arange(len(part))[:, None], part), 1)
            boot.append(_weighted_percentiles(*sides[1], drawn, qs)
                        - _weighted_percentiles(*sides[0], drawn, qs))
    stats = np.concatenate(boot)
    return [(d, *_percentile_interval(stats[:, i], level), len(common),
             bootstrap_p(d, stats[:, i])) for i, d in enumerate(diffs)]


def _sorted_by_value(values: np.ndarray, clusters: np.ndarray, position: pd.Series
                     ) -> tuple[np.ndarray, np.ndarray]:
    """(sorted values, their cluster positions), keeping only the paired clusters."""
    v = np.asarray(values, dtype=float)
    codes = pd.Series(np.asarray(clusters), dtype=object).map(position).to_numpy()
    keep = ~np.isnan(v) & ~pd.isna(codes)
    order = np.argsort(v[keep], kind="stable")
    return v[keep][order], codes[keep].astype(np.int64)[order]


def _weighted_percentiles(values: np.ndarray, codes: np.ndarray, drawn: np.ndarray,
                          qs: tuple[float, ...]) -> np.ndarray:
    """(rows of `drawn`, len(qs)): per row (times each cluster was drawn), numpy's
    linear-interpolation percentiles of the sample holding each value that many times."""
    cum = np.cumsum(drawn[:, codes], axis=1, dtype=np.int32)
    total = cum[:, -1].astype(float)
    out = np.empty((len(drawn), len(qs)))
    for i, q in enumerate(qs):
        h = (total - 1) * q / 100.0
        j0 = np.floor(h)
        j1 = np.minimum(j0 + 1, total - 1)
        i0 = (cum <= j0[:, None]).sum(axis=1)  # first position whose count passes j0
        i1 = (cum <= j1[:, None]).sum(axis=1)
        out[:, i] = values[i0] + (h - j0) * (values[i1] - values[i0])
    return out


def bootstrap_p(estimate: float, stats: np.ndarray) -> float:
    """Two-sided p of "no difference": normal approximation with the bootstrap standard error
    (continuous, so a multiplicity correction over many rows is not floored by 1/resamples as
    a count of resamples beyond 0 would be). Zero spread: 0 for a non-zero estimate, else 1."""
    se = float(np.std(stats, ddof=1)) if len(stats) > 1 else np.nan
    if np.isnan(se) or np.isnan(estimate):
        return np.nan
    if se == 0:
        return 1.0 if estimate == 0 else 0.0
    return erfc(abs(estimate) / se / sqrt(2))


def holm(p_values: list[float], alpha: float = 0.05) -> list[bool]:
    """Holm's step-down rejection over a family of p-values (NaN never rejected): controls
    the chance of any false "difference" across the family at alpha."""
    order = sorted((p, i) for i, p in enumerate(p_values) if not np.isnan(p))
    rejected = [False] * len(p_values)
    for rank, (p, i) in enumerate(order):
        if p > alpha / (len(order) - rank):
            break
        rejected[i] = True
    return rejected


def _percentile_interval(stats: np.ndarray, level: float) -> tuple[float, float]:
    alpha = (1 - level) / 2
    low, high = np.quantile(stats, [alpha, 1 - alpha])
    return float(low), float(high)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased chance that at least one of k trials drawn from n (c passing) passes."""
    if k > n:
        raise ValueError(f"k={k} > n={n}")
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Chance that all k trials drawn from n (c passing) pass (consistency, pass^k)."""
    if k > n:
        raise ValueError(f"k={k} > n={n}")
    return comb(c, k) / comb(n, k)
