"""What a metric is (tag, unit, direction) and the statistics every metric module shares."""

from __future__ import annotations

from dataclasses import dataclass
from math import comb

import numpy as np

PERCENTILES = (50, 90, 95, 99)
DISTRIBUTION_STATS = ("mean", "p50", "p90", "p95", "p99", "std", "min", "max", "count")
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0


@dataclass(frozen=True)
class Metric:
    """One definition. `key` is the summary column (or column prefix for distributions)."""

    key: str
    header: str
    unit: str
    larger_is_better: bool | None  # None: neither direction is better (a setting, a count)
    description: str
    aliases: str = ""  # the same quantity's name in aiperf / vLLM benchmark output
    distribution: bool = False  # summarised as mean/p50/p90/p95/p99/std/min/max/count


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
    """(mean, low, high): percentile bootstrap of the mean, seeded so reports are repeatable."""
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    if v.size == 0:
        return np.nan, np.nan, np.nan
    mean = float(v.mean())
    if v.size == 1:
        return mean, mean, mean
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    # Resample in chunks so memory stays bounded for large groups.
    chunk = max(1, min(resamples, 4_000_000 // v.size))
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        idx = rng.integers(0, v.size, size=(stop - start, v.size))
        means[start:stop] = v[idx].mean(axis=1)
    alpha = (1 - level) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return mean, float(low), float(high)


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
