"""Configurations side by side: each other source against the first, level by level."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.metrics import BY_KEY

COMPARE_KEYS = (
    "ttft_ms_p50", "ttft_ms_p99", "itl_ms_p50", "itl_ms_p99", "tpot_ms_p50", "e2e_ms_p50",
    "e2e_ms_p99", "output_tps_per_user_p50", "output_token_throughput", "request_throughput",
    "achieved_concurrency", "error_rate", "goodput_request_share", "tsq_mean",
    "param_validity_mean", "pass_at_1", "extra_token_share", "cached_token_share",
)


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


def compare_table(summary: pd.DataFrame, keys: tuple[str, ...] = COMPARE_KEYS) -> pd.DataFrame:
    """Long table: level, metric, baseline, source, value, delta, delta_pct, better."""
    sources = list(dict.fromkeys(summary["source"]))
    if len(sources) < 2:
        return pd.DataFrame(columns=["level", "metric", "unit", "baseline", "source", "value",
                                     "delta", "delta_pct", "better"])
    baseline, rows = sources[0], []
    indexed = summary.set_index(["source", "level"])
    for other in sources[1:]:
        for base_level, other_level, label in _pairs(summary, baseline, other):
            for key in keys:
                if key not in indexed.columns:
                    continue
                a = float(indexed.loc[(baseline, base_level), key])
                b = float(indexed.loc[(other, other_level), key])
                delta = b - a
                pct = delta / abs(a) * 100 if a and not np.isnan(a) else np.nan
                metric = metric_of(key)
                better = None
                if (metric is not None and metric.larger_is_better is not None
                        and not np.isnan(delta) and delta != 0):
                    better = (delta > 0) == metric.larger_is_better
                rows.append({"level": label, "metric": key,
                             "unit": metric.unit if metric else "", "baseline": a,
                             "source": other, "value": b, "delta": delta, "delta_pct": pct,
                             "better": better})
    return pd.DataFrame(rows)
