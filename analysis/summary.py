"""One summary row per (source, level): status counts, every metric of `analysis.metrics`, and
the provenance of its quality figures (`analysis.provenance`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from analysis.judge.figures import level_judge
from analysis.metrics import throughput
from analysis.metrics.goodput import SLO, goodput_metrics
from analysis.metrics.host import host_metrics
from analysis.metrics.integrity import integrity_metrics
from analysis.metrics.latency import latency_metrics
from analysis.metrics.quality import quality_metrics
from analysis.metrics.server import server_metrics
from analysis.metrics.throughput import failed_and_counted, throughput_metrics
from analysis.metrics.usage import usage_metrics
from analysis.provenance import level_provenance
from analysis.shards import configured_concurrency, level_resumed, level_window_of
from analysis.status import STATUSES
from analysis.tables import Tables
from analysis.windows import in_window

GROUP = ["source", "level"]


def status_counts(trials: pd.DataFrame) -> dict[str, float]:
    counts = trials["status"].value_counts()
    out: dict[str, float] = {"n_trials": float(len(trials))}
    for status in STATUSES:
        out[f"n_{status}"] = float(counts.get(status, 0))
    out["n_counted"] = float(trials["in_quality"].astype(bool).sum())
    out["n_excluded"] = out["n_infra_failed"] + out["n_harness_failed"] + out["n_interrupted"]
    finished = out["n_counted"] + out["n_excluded"]
    out["excluded_share"] = out["n_excluded"] / finished if finished else np.nan
    out["n_reward_imputed"] = float(trials["reward_imputed"].astype(bool).sum())
    out["n_requests_unreadable"] = float(
        pd.to_numeric(trials.get("requests_unreadable"), errors="coerce").fillna(0).sum()
        if "requests_unreadable" in trials else 0)
    return out


def summarize(tables: Tables, slo: SLO | None = None) -> pd.DataFrame:
    """Summary table, one row per (source, level), columns named after the metric keys."""
    rows = []
    requests, trials = tables.requests, tables.trials
    # Serving figures describe the agent's own calls (agent and evaluator); calls of other
    # roles (a simulated customer on its own endpoint) stay out of every per-level figure.
    measured = (requests["measured"].to_numpy(dtype=bool) if "measured" in requests
                else np.ones(len(requests), dtype=bool))
    positions = np.flatnonzero(measured)
    req_groups = ({key: positions[rows] for key, rows in
                   requests.iloc[positions].groupby(GROUP, sort=False).indices.items()}
                  if len(positions) else {})
    itl_level_rows = tables.itl["request_row"].to_numpy()
    ok = requests["ok"].to_numpy(dtype=bool)
    itl_values = tables.itl["itl_ms"].to_numpy()
    # Map every gap to its request's group number once, then split.
    group_of_row = np.full(len(requests), -1, dtype=np.int64)
    keys = list(req_groups)
    for number, key in enumerate(keys):
        group_of_row[req_groups[key]] = number
    gap_group = group_of_row[itl_level_rows] if len(itl_level_rows) else itl_level_rows
    gap_ok = ok[itl_level_rows] if len(itl_level_rows) else np.zeros(0, dtype=bool)
    # A level run by shards has one job row per shard: its configured concurrency is theirs
    # summed (analysis/shards.py); the /metrics scrapes are the level's, the same on every row.
    jobs = tables.jobs.groupby(GROUP).agg(
        metrics_before=("metrics_before", "first"), metrics_after=("metrics_after", "first"),
        host_load=("host_load", "first"))
    jobs["configured_concurrency"] = configured_concurrency(tables.jobs) if len(jobs) else []
    # Input order of sources (the first is the comparison baseline), then level; a job with
    # no trial folder yet still gets its row.
    order = {source: i for i, source in enumerate(tables.sources)}
    trial_groups = trials.groupby(GROUP, sort=False).indices if len(trials) else {}
    group_keys = sorted({*trial_groups, *zip(tables.jobs["source"], tables.jobs["level"],
                                             strict=True)},
                        key=lambda k: (order.get(k[0], len(order)), k[1]))
    in_window_row = np.zeros(len(requests), dtype=bool)
    for source, level in group_keys:
        trial_rows = trials.iloc[trial_groups.get((source, level), np.zeros(0, dtype=np.int64))]
        idx = req_groups.get((source, level), np.zeros(0, dtype=np.int64))
        req = requests.iloc[idx]
        job = jobs.loc[(source, level)] if (source, level) in jobs.index else None
        configured = job["configured_concurrency"] if job is not None else level
        # Every rate and request percentile of the level is over its measured window.
        window = level_window_of(tables, source, level, trial_rows, req, float(configured))
        inside = in_window(req, window)
        in_window_row[idx] = inside
        number = keys.index((source, level)) if (source, level) in req_groups else -2
        gap_in = in_window_row[itl_level_rows] if len(itl_level_rows) else gap_ok
        gaps = itl_values[(gap_group == number) & gap_ok & gap_in]
        row: dict[str, object] = {"source": source, "level": level}
        row.update(status_counts(trial_rows))
        row["n_requests"] = float(len(req))
        failed, counted = failed_and_counted(req)
        row["n_failed_requests"] = float((failed & counted).sum())
        row["n_cancelled_requests"] = float((~counted).sum())
        row.update(latency_metrics(req[inside], gaps))
        row.update(throughput_metrics(req, trial_rows, float(configured), window))
        row[throughput.RESUMED.key] = level_resumed(tables, source, level)
        row.update(quality_metrics(trial_rows))
        if slo is not None:
            row.update(goodput_metrics(req[inside], trial_rows, slo, window.seconds))
        row.update(usage_metrics(req, trial_rows))
        row.update(integrity_metrics(req))
        row["token_counts"] = token_counts(req)
        if job is not None and pd.notna(job["metrics_before"]) and pd.notna(job["metrics_after"]):
            row.update(server_metrics(Path(job["metrics_before"]), Path(job["metrics_after"])))
        if job is not None and pd.notna(job["host_load"]):
            row.update(host_metrics(Path(job["host_load"])))
        rows.append(row)
    if not rows:
        return pd.DataFrame(columns=GROUP)
    # What made the TSQ figure: the tasks' provenance, then the judge's verdicts beside it.
    provenance = level_provenance(trials, tables.jobs, tables.sweeps, tables.task_dirs).merge(
        level_judge(trials, tables.jobs), on=GROUP, how="left")
    return pd.DataFrame(rows).merge(provenance, on=GROUP, how="left")


def token_counts(req: pd.DataFrame) -> str:
    """Who counted the level's tokens: server (its usage), client (the agent's --ak
    tokenizer), a mix of the two, or unknown (no usage and no tokenizer)."""
    if "token_source" not in req.columns or not len(req):
        return "unknown"
    seen = set(req.loc[req["ok"], "token_source"].dropna()) if "ok" in req else set()
    if not seen:
        return "unknown"
    return seen.pop() if len(seen) == 1 else "mixed"
