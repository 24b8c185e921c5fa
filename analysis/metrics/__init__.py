"""Metric definitions, one per quantity, each with its unit and direction.

Each module holds a family and a function that computes it for one group of rows; metrics
never import plotting or reporting. `ALL` lists every definition (report tables and
summary.json take headers, units and directions from here).
"""

from __future__ import annotations

from analysis.metrics import goodput, latency, quality, server, throughput, usage
from analysis.metrics.base import Metric

ALL: tuple[Metric, ...] = (
    *latency.METRICS, *throughput.METRICS, *quality.METRICS, *goodput.METRICS, *usage.METRICS,
    *server.METRICS,
)
BY_KEY: dict[str, Metric] = {m.key: m for m in ALL}

__all__ = ["ALL", "BY_KEY", "Metric"]
