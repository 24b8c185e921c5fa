"""Configurations side by side: each other source against the first, level by level.

Figures are compared *paired by scenario*: the difference is taken over the scenarios both
runs have, and its 95% interval comes from a bootstrap that draws one set of scenarios for
both runs at once. Quality is averaged per scenario first, then differenced
(`paired_cluster_bootstrap_diff_ci` on one mean per scenario): every scenario weighs the same
in both runs, so trials lost to infra failures in one run cannot shift the weights and pass
for a quality difference. Per-request latency percentiles and the error rate are compared over
the requests of the drawn scenarios (`paired_cluster_bootstrap_quantile_diff_ci`); those
intervals are *within-run*: they resample the scenarios of these two runs and hold no
run-to-run variation of the server (repeat the runs to see that).

A compare prints many verdicts (metrics × levels × sources), so they are one family: a row is
called better or worse only when its interval excludes 0 *and* Holm's step-down procedure over
every verdict-bearing row of the table rejects "no difference" at 5 % (p from the bootstrap
standard error, `bootstrap_p`); otherwise "no clear difference". Figures with no interval
(pooled ITL gaps, throughput and concurrency over a run's window, token shares) show the delta
and are not called.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.metrics import BY_KEY
from analysis.metrics.base import (
    holm,
    paired_cluster_bootstrap_diff_ci,
    paired_cluster_bootstrap_quantile_diff_ci,
)
from analysis.metrics.integrity import COLUMNS as INTEGRITY_COLUMNS
from analysis.metrics.integrity import summary_key
from analysis.metrics.quality import PAIRED_KEYS, values_for
from analysis.metrics.throughput import failed_and_counted

COMPARE_KEYS = (
    "ttft_ms_p50", "ttft_ms_p99", "itl_ms_p50", "itl_ms_p99", "tpot_ms_p50", "e2e_ms_p50",
    "e2e_ms_p99", "output_tps_per_user_p50", "output_token_throughput", "request_throughput",
    "achieved_concurrency", "error_rate", "goodput_request_share", "tsq_mean",
    "tsq_infra0_mean", "solved_mean", "solved_infra0_mean", "param_validity_mean",
    "extra_token_share", "cached_token_share",
    *(summary_key(c) for c in INTEGRITY_COLUMNS),
)
# Tool-call integrity: the share of classified replies per class, paired like the error rate;
# a class neither run shows (both 0, or neither classified a reply) gets no row.
INTEGRITY_KEYS = {summary_key(c): c for c in INTEGRITY_COLUMNS}
COLUMNS = ["level", "metric", "unit", "baseline", "source", "value", "delta", "delta_pct",
           "delta_ci_low", "delta_ci_high", "n_paired", "interval", "p_value", "holm_reject",
           "verdict", "better"]
FAMILY_ALPHA = 0.05  # Holm, over every verdict-bearing row of one compare table
QUALITY_INTERVAL = "per-scenario means, scenario bootstrap"
REQUEST_INTERVAL = "within-run scenario bootstrap"
BETTER, WORSE, UNCLEAR = "better", "worse", "no clear difference"
# Fewer paired scenarios than this: the delta and interval are shown, no verdict is called.
# Under the null the rule above calls a difference 16-40 % of the time from 2-5 scenarios,
# 9-10 % from 10, 4-8 % from 20 (benchmarks/compare_small_n.py, 400 simulations per cell).
MIN_PAIRED_SCENARIOS = 10
TOO_FEW = f"not called (< {MIN_PAIRED_SCENARIOS} scenarios)"
# Summary column → (request column over successful requests, percentile) compared by a paired
# scenario bootstrap of that percentile; None: a share, the mean of a 0/1 column (error_rate:
# `failed` over all requests; an integrity class: over the classified replies).
REQUEST_KEYS: dict[str, tuple[str, float | None]] = {
    "ttft_ms_p50": ("ttft_ms", 50), "ttft_ms_p99": ("ttft_ms", 99),
    "e2e_ms_p50": ("e2e_ms", 50), "e2e_ms_p99": ("e2e_ms", 99), "tpot_ms_p50": ("tpot_ms", 50),
    "output_tps_per_user_p50": ("output_tps_per_user", 50), "error_rate": ("failed", None),
    **{key: (column, None) for key, column in INTEGRITY_KEYS.items()},
}
# A percentile resample costs a pass over every request of both runs: fewer resamples than
# for means keeps a 100k-request comparison to seconds; the interval ends move by < 1 %.
QUANTILE_RESAMPLES = 1000


def metric_of(column: str):
    """The definition behind a summary column (`ttft_ms_p99` → TTFT, `tsq_mean` → TSQ)."""
    if column in BY_KEY:
        return BY_KEY[column]
    base = column.rsplit("_", 1)[0]
    return BY_KEY.get(base)


def _pairs(summary: pd.DataFrame, baseline: str, other: str) -> list[tuple[int, int, str]]:
    """(baseline level, other level, label): same levels; two single jobs pair up directly."""
    base_levels = sorted(summary.loc[summary["source"] == baseline, "level"])
    other_levels = sorted(summary.loc[summary["source"] == other, "level"])
    if len(base_levels) == 1 and len(other_levels) == 1:
        a, b = base_levels[0], other_levels[0]
        return [(a, b, f"c{a}" if a == b else f"c{a} vs c{b}")]
    return [(lv, lv, f"c{lv}") for lv in base_levels if lv in other_levels]


def verdict(low: float, high: float, larger_is_better: bool | None) -> tuple[str, bool | None]:
    """(verdict text, better?) from a paired interval of other − baseline."""
    if larger_is_better is None or np.isnan(low) or np.isnan(high):
        return ("" if larger_is_better is None else UNCLEAR), None
    if low > 0 or high < 0:
        better = (low > 0) == larger_is_better
        return (BETTER if better else WORSE), better
    return UNCLEAR, None


def compare_table(summary: pd.DataFrame, trials: pd.DataFrame | None = None,
                  requests: pd.DataFrame | None = None,
                  keys: tuple[str, ...] = COMPARE_KEYS) -> pd.DataFrame:
    """Long table, one row per (level pair, metric, other source); see `COLUMNS`.

    With `trials` and `requests` (the tables behind `summary`), quality and request keys get a
    paired interval and a verdict; without, or for other keys, the verdict stays empty."""
    sources = list(dict.fromkeys(summary["source"]))
    if len(sources) < 2:
        return pd.DataFrame(columns=COLUMNS)
    baseline, rows = sources[0], []
    indexed = summary.set_index(["source", "level"])
    for other in sources[1:]:
        for base_level, other_level, label in _pairs(summary, baseline, other):
            sides = ((baseline, base_level), (other, other_level))
            per_request = (_paired_requests(requests, keys, *sides) if requests is not None
                           else {})
            for key in keys:
                if key not in indexed.columns:
                    continue
                a = float(indexed.loc[(baseline, base_level), key])
                b = float(indexed.loc[(other, other_level), key])
                if key in INTEGRITY_KEYS and not (a > 0 or b > 0):
                    continue
                metric = metric_of(key)
                row = {"level": label, "metric": key, "unit": metric.unit if metric else "",
                       "baseline": a, "source": other, "value": b, "delta": b - a,
                       "delta_ci_low": np.nan, "delta_ci_high": np.nan, "n_paired": np.nan,
                       "interval": "", "p_value": np.nan, "holm_reject": False,
                       "verdict": "", "better": None}
                direction = metric.larger_is_better if metric else None
                if trials is not None and key in PAIRED_KEYS:
                    row |= _row(*_paired(trials, key, *sides), direction) | {
                        "interval": QUALITY_INTERVAL}
                elif key in per_request:
                    row |= _row(*per_request[key], direction) | {"interval": REQUEST_INTERVAL}
                delta = row["delta"]
                row["delta_pct"] = delta / abs(a) * 100 if a and not np.isnan(a) else np.nan
                rows.append(row)
    return _family(pd.DataFrame(rows, columns=COLUMNS))


def _family(table: pd.DataFrame) -> pd.DataFrame:
    """Holm over the rows that carry a verdict; a called difference must survive it."""
    judged = table["verdict"].isin([BETTER, WORSE, UNCLEAR])
    rejected = pd.Series(holm(table.loc[judged, "p_value"].astype(float).tolist(),
                              FAMILY_ALPHA), index=table.index[judged], dtype=bool)
    table["holm_reject"] = rejected.reindex(table.index, fill_value=False).astype(bool)
    lost = table["verdict"].isin([BETTER, WORSE]) & ~table["holm_reject"]
    table.loc[lost, "verdict"] = UNCLEAR
    table.loc[lost, "better"] = None
    return table


def _paired(trials: pd.DataFrame, key: str, base: tuple[str, int], other: tuple[str, int]
            ) -> tuple[float, float, float, int, float]:
    def side(source: str, level: int) -> tuple[np.ndarray, np.ndarray]:
        rows = trials[(trials["source"] == source) & (trials["level"] == level)]
        values, scenarios = values_for(rows, key) or (np.zeros(0), np.zeros(0, dtype=object))
        # One mean per scenario, so repeats (and repeats lost to failures) change no weight.
        means = pd.Series(values).groupby(pd.Series(scenarios, dtype=object)).mean().dropna()
        return means.to_numpy(dtype=float), means.index.to_numpy(dtype=object)

    return paired_cluster_bootstrap_diff_ci(*side(*base), *side(*other))


def _paired_requests(requests: pd.DataFrame, keys: tuple[str, ...], base: tuple[str, int],
                     other: tuple[str, int]
                     ) -> dict[str, tuple[float, float, float, int, float]]:
    """Paired differences of every `REQUEST_KEYS` key asked for; the percentiles of one
    column share one bootstrap pass."""
    def side(source: str, level: int, column: str) -> tuple[np.ndarray, np.ndarray]:
        rows = requests[(requests["source"] == source) & (requests["level"] == level)]
        if "measured" in rows:  # as in the summary: the system under test's calls only
            rows = rows[rows["measured"].astype(bool)]
        if column == "failed":  # error rate: every request but the cancelled, 1 if it failed
            failed, counted = failed_and_counted(rows)
            return failed[counted].astype(float), rows["scenario_id"].to_numpy()[counted]
        rows = rows[rows["ok"].astype(bool)]
        return rows[column].to_numpy(dtype=float), rows["scenario_id"].to_numpy()

    by_column: dict[str, list[str]] = {}
    for key in keys:
        if key in REQUEST_KEYS:
            by_column.setdefault(REQUEST_KEYS[key][0], []).append(key)
    out: dict[str, tuple[float, float, float, int, float]] = {}
    for column, wanted in by_column.items():
        data = (*side(*base, column), *side(*other, column))
        if REQUEST_KEYS[wanted[0]][1] is None:  # a share: the mean of 0/1 per request
            out[wanted[0]] = paired_cluster_bootstrap_diff_ci(*data)
            continue
        qs = tuple(float(REQUEST_KEYS[k][1] or 0) for k in wanted)
        found = paired_cluster_bootstrap_quantile_diff_ci(*data, qs,
                                                          resamples=QUANTILE_RESAMPLES)
        out.update(zip(wanted, found, strict=True))
    return out


def _row(diff: float, low: float, high: float, n: int, p: float,
         larger_is_better: bool | None) -> dict[str, object]:
    text, better = verdict(low, high, larger_is_better)
    if n and text and n < MIN_PAIRED_SCENARIOS:  # outside the family Holm corrects
        text, better = TOO_FEW, None
    # Over the scenarios both runs have; for quality, the mean of per-scenario differences.
    return {"delta": diff, "delta_ci_low": low, "delta_ci_high": high, "n_paired": float(n),
            "p_value": p, "verdict": text if n else "", "better": better}
