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
from analysis.metrics.base import Metric

ALL: tuple[Metric, ...] = (
    *latency.METRICS, *throughput.METRICS, *quality.METRICS, *goodput.METRICS, *usage.METRICS,
    *server.METRICS, *host.METRICS, *counts.METRICS, *integrity.METRICS, integrity.N_REPLIES,
)
BY_KEY: dict[str, Metric] = {m.key: m for m in ALL}


def labels(*keys: str) -> dict[str, str]:
    """Summary column → how a report table names it (`Metric.label`)."""
    return {key: BY_KEY[key].label for key in keys}

__all__ = ["ALL", "BY_KEY", "Metric", "labels"]
