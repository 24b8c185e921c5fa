"""The server's view of each level from Dynamo's request trace (contracts/request_trace.py):
per level the share of prompt tokens served from the KV cache, the queue wait before prefill
(`prefill_wait_time_ms`) and how evenly the workers were loaded.

Each `request_end` line is joined to the client's llm_calls.jsonl row whose `request_id` is
its `x_request_id`; lines without one (the frontend's own readiness probe, other clients) are
counted but not joined.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from pydantic import ValidationError

from analysis.markdown import table
from analysis.tables import Tables
from contracts.request_trace import REQUEST_TRACE_FILE, TraceLine

_COLUMNS = ["source", "level", "x_request_id", "input_tokens", "cached_tokens",
            "prefill_wait_time_ms", "ttft_ms", "worker"]


def read_trace(path: Path) -> list[dict]:
    """request_end records of one trace file; unreadable lines are skipped."""
    rows = []
    for raw in path.read_bytes().splitlines():
        try:
            line = TraceLine.model_validate(json.loads(raw))
        except (ValueError, ValidationError):
            continue
        request = line.event.request
        if line.event.event_type != "request_end" or request is None:
            continue
        worker = request.worker
        rows.append({"x_request_id": request.x_request_id,
                     "input_tokens": request.input_tokens,
                     "cached_tokens": request.cached_tokens,
                     "prefill_wait_time_ms": request.prefill_wait_time_ms,
                     "ttft_ms": request.ttft_ms,
                     "worker": None if worker is None else str(
                         worker.decode_worker_id or worker.prefill_worker_id)})
    return rows


def trace_table(tables: Tables) -> pd.DataFrame:
    """One row per traced request of every job that has a request_trace.jsonl, with
    `joined` (its x_request_id is one of the job's llm_calls request ids)."""
    rows, seen = [], set()
    for job in tables.jobs.itertuples():
        # A sharded level's trace lies in its level folder, once for all its shards.
        folder = Path(job.path).parent if pd.notna(job.shard) else Path(job.path)
        path = folder / REQUEST_TRACE_FILE
        if path.is_file() and path not in seen:
            seen.add(path)
            rows += [dict(r, source=job.source, level=job.level) for r in read_trace(path)]
    frame = pd.DataFrame(rows, columns=_COLUMNS)
    known = set(tables.requests["request_id"]) if len(tables.requests) else set()
    return frame.assign(joined=frame["x_request_id"].isin(known))


def server_view(tables: Tables) -> pd.DataFrame:
    """Per (source, level): traced and joined requests, cache-hit share of prompt tokens,
    queue wait p50/p90, the number of workers and the busiest worker's share of requests."""
    frame = trace_table(tables)
    rows = []
    for (source, level), part in frame.groupby(["source", "level"], sort=False):
        mine = part[part["joined"]]
        wait = mine["prefill_wait_time_ms"].dropna().to_numpy(dtype=float)
        inputs = mine["input_tokens"].fillna(0).sum()
        load = mine["worker"].value_counts()
        rows.append({
            "source": source, "level": int(level), "traced": len(part), "joined": len(mine),
            "cache_hit_share": float(mine["cached_tokens"].fillna(0).sum() / inputs)
            if inputs else np.nan,
            "queue_wait_ms_p50": float(np.percentile(wait, 50)) if wait.size else np.nan,
            "queue_wait_ms_p90": float(np.percentile(wait, 90)) if wait.size else np.nan,
            "workers": int(load.size),
            "busiest_worker_share": float(load.max() / load.sum()) if load.size else np.nan,
        })
    return pd.DataFrame(rows)


def server_view_section(tables: Tables) -> list[str]:
    """The report's *Server's view* section; none when no level has a request trace."""
    view = server_view(tables)
    if view.empty:
        return []
    return ["## Server's view (Dynamo request trace)", "",
            "Each `request_end` record joined to the client's call by x_request_id == "
            "request_id. Cache hit: cached / input prompt tokens; queue wait: the trace's "
            "`prefill_wait_time_ms`; busiest worker: its share of the level's requests.", "",
            table(view, ["source", "level", "traced", "joined", "cache hit", "queue wait p50 ms",
                         "queue wait p90 ms", "workers", "busiest worker"]), ""]
