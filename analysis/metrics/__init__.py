"""Metric definitions, one per quantity, each with its unit and direction.

Each module holds a family and a function that computes it for one group of rows; metrics
never import plotting or reporting. `ALL` lists every definition (report tables and
summary.json take names, units and directions from here; `labels` gives a table's column
names).
"""

from __future__ import annotations

from analysis.metrics import (
    counts,
    goodput,
    host,
    integrity,
    latency,
    quality,
    server,
    throughput,
    usage,
)
from analysis.metrics.base import DISTRIBUTION_STATS, Metric

ALL: tuple[Metric, ...] = (
    *latency.METRICS, *throughput.METRICS, *quality.METRICS, *goodput.METRICS, *usage.METRICS,
    *server.METRICS, *host.METRICS, *counts.METRICS, *integrity.METRICS, integrity.N_REPLIES,
)
BY_KEY: dict[str, Metric] = {m.key: m for m in ALL}


# What follows a metric's key in the summary column of one of its figures: a distribution's
# statistics, a mean's interval ends.
_STATS = (*DISTRIBUTION_STATS, "ci_low", "ci_high")


def labels(*keys: str) -> dict[str, str]:
    """Summary column → how a report table names it (`Metric.label`)."""
    return {key: BY_KEY[key].label for key in keys}


def figure_of(column: str) -> tuple[Metric, str]:
    """The definition behind a summary column and which of its figures the column holds
    ("" for the metric itself): `ttft_ms_p50` → (TTFT, "p50"), `tsq_ci_low` → (TSQ,
    "ci_low"). KeyError for a column the registry does not know."""
    if column in BY_KEY:
        return BY_KEY[column], ""
    for stat in _STATS:
        key = column.removesuffix(f"_{stat}")
        if key != column and key in BY_KEY:
            return BY_KEY[key], stat
    raise KeyError(f"{column}: no metric in analysis/metrics defines this column")


__all__ = ["ALL", "BY_KEY", "Metric", "figure_of", "labels"]
