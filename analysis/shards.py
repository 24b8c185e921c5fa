"""Achieved vs configured concurrency per level and per shard.

A level run by several Harbor processes (`bankbench sweep --shards N`, contracts/sweep.py) has
one job per shard. A shard that cannot keep its agents busy (its host's CPU is full, its
process lags) shows as achieved concurrency below its configured share while the others hold
theirs: a client bottleneck, visible as one, never read as the server's. One process per level
gives one row per level, so the section has the same shape either way.

Achieved concurrency is the analysis definition (analysis/metrics/throughput.py: request time
in flight inside the level's measured window / window, analysis/windows.py, on the wall clock
`start_unix_ns`), applied to the measured requests of the level or of one shard over the
level's one window; each request's e2e is on its own process's monotonic clock. The level's
window is cut here, from the trials and sweep.json's record of the level's runs, for the
summary too (`level_window_of`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.markdown import table
from analysis.tables import Tables
from analysis.windows import Window, busy_seconds, level_window
from contracts.sweep import DEFAULT_WARMUP_SHARE

COLUMNS = ["source", "level", "shard", "host", "configured", "achieved", "achieved_share",
           "trials", "window_s"]


def level_window_of(tables: Tables, source: str, level: object, trials: pd.DataFrame,
                    requests: pd.DataFrame, configured: float) -> Window:
    """The level's measured window, cut the way its sweep says (warm-up share, drain) and per
    run of it that sweep.json recorded; defaults for a single job or an older sweep."""
    manifest = tables.sweeps.get(source)
    runs: list = []
    share, keep_drain = DEFAULT_WARMUP_SHARE, False
    if manifest is not None:
        share, keep_drain = manifest.config.warmup_share, manifest.config.keep_drain
        record = next((r for r in manifest.level_records if r.level == level), None)
        if record is not None:
            runs = [(run.started_at, run.cut_at) for run in record.runs]
    return level_window(trials, requests, configured, runs=runs, warmup_share=share,
                        keep_drain=keep_drain)


def level_resumed(tables: Tables, source: str, level: object) -> bool:
    """The level was continued after an interruption (sweep.json says so)."""
    manifest = tables.sweeps.get(source)
    record = next((r for r in manifest.level_records if r.level == level), None) \
        if manifest is not None else None
    return bool(record is not None and record.resumed)


def configured_concurrency(jobs: pd.DataFrame) -> pd.Series:
    """Configured concurrency per (source, level): its shards' summed (they run together),
    the largest over its passes (which run one after another)."""
    folder = jobs["job"].astype(str).str.split("/").str[0]
    per_pass = jobs.assign(_folder=folder).groupby(
        ["source", "level", "_folder"])["configured_concurrency"].sum()
    return per_pass.groupby(level=["source", "level"]).max()


def _row(req: pd.DataFrame, configured: float, level_window: Window) -> dict[str, float]:
    window = level_window.seconds if len(req) else np.nan
    achieved = busy_seconds(req, level_window) / window if window == window else np.nan
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
        configured = float(configured_concurrency(jobs).iloc[0])
        level_trials = trials[(trials["source"] == source) & (trials["level"] == level)]
        window = level_window_of(tables, source, level, level_trials, mine, configured)
        if len(jobs) > 1 or jobs["shard"].notna().any():
            for job in jobs.itertuples(index=False):
                part = mine[mine["job"] == job.job]
                n = int(((trials["source"] == source) & (trials["job"] == job.job)).sum())
                shard = f"s{int(job.shard)}" if pd.notna(job.shard) else str(job.job)
                rows.append({"source": source, "level": level, "shard": shard,
                             "host": job.host or "", "trials": n,
                             **_row(part, float(job.configured_concurrency), window)})
        n = int(((trials["source"] == source) & (trials["level"] == level)).sum())
        hosts = sorted({h for h in jobs["host"] if isinstance(h, str) and h})
        rows.append({"source": source, "level": level, "shard": "all",
                     "host": ", ".join(hosts), "trials": n,
                     **_row(mine, configured, window)})
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
            "*achieved*: LLM requests in flight on average over the level's measured window "
            "(request time inside the window / window; the window leaves out each run's "
            "warm-up and drain and the pause of a resume: *Throughput and concurrency*). A level "
            "run by shards (`--shards`) has a row per shard (its own Harbor process) before "
            "the level's row; a shard far below its configured share while the others hold "
            "theirs is a client bottleneck (that process or host), not the server's.", ""]
