"""Achieved vs configured concurrency per level and per shard.

A level run by several Harbor processes (`bankbench sweep --shards N`, contracts/sweep.py) has
one job per shard. A shard that cannot keep its agents busy (its host's CPU is full, its
process lags) shows as achieved concurrency below its configured share while the others hold
theirs: a client bottleneck, visible as one, never read as the server's. One process per level
gives one row per level, so the section has the same shape either way.

Achieved concurrency is the analysis definition (analysis/metrics/throughput.py: Σ request
e2e over the measured window, first start to last end on the wall clock `start_unix_ns`),
applied to the measured requests of the level or of one shard; each request's e2e is on its own
process's monotonic clock.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.markdown import table
from analysis.metrics.throughput import window_seconds
from analysis.tables import Tables

COLUMNS = ["source", "level", "shard", "host", "configured", "achieved", "achieved_share",
           "trials", "window_s"]


def _row(req: pd.DataFrame, configured: float) -> dict[str, float]:
    window = window_seconds(req) if len(req) else np.nan
    busy = float(np.nansum(req["e2e_ms"].to_numpy(dtype=float))) / 1000.0
    achieved = busy / window if window and window == window else np.nan
    return {"configured": configured, "achieved": achieved,
            "achieved_share": achieved / configured if configured else np.nan,
            "window_s": window}


def concurrency_table(tables: Tables) -> pd.DataFrame:
    """One row per level (`shard` "all") and, for a sharded level, one per shard before it."""
    req = tables.requests
    req = req[req["measured"]] if "measured" in req else req
    trials = tables.trials
    rows = []
    for (source, level), jobs in tables.jobs.groupby(["source", "level"], sort=False):
        mine = req[(req["source"] == source) & (req["level"] == level)]
        if len(jobs) > 1 or jobs["shard"].notna().any():
            for job in jobs.itertuples(index=False):
                part = mine[mine["job"] == job.job]
                n = int(((trials["source"] == source) & (trials["job"] == job.job)).sum())
                shard = f"s{int(job.shard)}" if pd.notna(job.shard) else str(job.job)
                rows.append({"source": source, "level": level, "shard": shard,
                             "host": job.host or "", "trials": n,
                             **_row(part, float(job.configured_concurrency))})
        n = int(((trials["source"] == source) & (trials["level"] == level)).sum())
        hosts = sorted({h for h in jobs["host"] if isinstance(h, str) and h})
        rows.append({"source": source, "level": level, "shard": "all",
                     "host": ", ".join(hosts), "trials": n,
                     **_row(mine, float(jobs["configured_concurrency"].sum()))})
    return pd.DataFrame(rows, columns=COLUMNS)


def section(tables: Tables) -> list[str]:
    frame = concurrency_table(tables)
    if frame.empty:
        return []
    shown = frame.assign(
        configured=frame["configured"].map(lambda v: f"{v:g}"),
        achieved=frame["achieved"].map(lambda v: "–" if v != v else f"{v:.2f}"),
        achieved_share=frame["achieved_share"].map(lambda v: "–" if v != v else f"{v:.0%}"),
        window_s=frame["window_s"].map(lambda v: "–" if v != v else f"{v:.1f}"))
    return ["## Achieved concurrency", "",
            table(shown, ["source", "level", "shard", "host", "configured", "achieved",
                          "achieved / configured", "trials", "window s"]), "",
            "*achieved*: LLM requests in flight on average over the window (Σ e2e / window, "
            "wall-clock window from the first request's start to the last one's end). A level "
            "run by shards (`--shards`) has a row per shard (its own Harbor process) before "
            "the level's row; a shard far below its configured share while the others hold "
            "theirs is a client bottleneck (that process or host), not the server's.", ""]
