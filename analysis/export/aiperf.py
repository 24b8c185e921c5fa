"""A job or sweep's LLM requests in AIPerf's profile-export shape (aiperf 0.13.0), so AIPerf's
plot and comparison tools read a bankbench level as one of their own runs.

Per level (and arm), as AIPerf writes a run's artifacts:
- `profile_export.jsonl`: one line per request of the measured roles (agent, evaluator), the
  shape of `aiperf.common.models.record_models.MetricRecordInfo` — `metadata` (wall-clock
  start/end in ns, `x_request_id`, the session as `x_correlation_id`, ...), `metrics` (tag →
  `{value, unit}` in AIPerf's display units) and `error`.
- `profile_export_aiperf.json`: the level's aggregates, the shape of
  `aiperf.common.models.export_models.JsonExportData` (schema 1.4): per metric
  `{unit, avg, p1 … p99, min, max, std, count, sum}`, throughput over the level's window, and
  an `input_config` naming the model, endpoint and the level as a concurrency phase.

Each value is bankbench's own definition (analysis/metrics/latency.py), placed under the AIPerf
tag that means the same thing; `TAGS` says which, docs/export.md says where they differ.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field

from analysis.export.layout import Arm, ExportManifest, FileSets, jsonl, run_export, set_folder
from analysis.files import Issue
from analysis.metrics.throughput import throughput_metrics
from analysis.tables import Tables

FORMAT = "aiperf"
RECORDS_FILE = "profile_export.jsonl"
AGGREGATE_FILE = "profile_export_aiperf.json"
SCHEMA_VERSION = "1.4"
PERCENTILES = (1, 5, 10, 25, 50, 75, 90, 95, 99)

# AIPerf tag → (bankbench requests column, AIPerf display unit). AIPerf's inter_token_latency
# is (latency − TTFT) / (output tokens − 1): bankbench's TPOT, not its pooled chunk gaps,
# which are AIPerf's inter_chunk_latency (below, from the gap table).
TAGS: dict[str, tuple[str, str]] = {
    "request_latency": ("e2e_ms", "ms"),
    "time_to_first_token": ("ttft_ms", "ms"),
    "inter_token_latency": ("tpot_ms", "ms"),
    "output_token_throughput_per_user": ("output_tps_per_user", "tokens/sec/user"),
    "output_sequence_length": ("completion_tokens", "tokens"),
    "input_sequence_length": ("prompt_tokens", "tokens"),
}
CHUNK_TAG = "inter_chunk_latency"


class MetricValue(BaseModel):
    value: float | int | list[float]
    unit: str


class RecordMetadata(BaseModel):
    session_num: int = Field(description="The trial's index in its level, by start.")
    x_request_id: str
    x_correlation_id: str | None = Field(description="The session: the trial's session id.")
    conversation_id: str = Field(description="The scenario the trial ran.")
    turn_index: int = Field(description="The request's index among its trial's requests.")
    request_start_ns: int
    request_end_ns: int
    worker_id: str = Field(description="The Harbor job (shard) whose agent sent it.")
    record_processor_id: str = "bankbench"
    benchmark_phase: str = "profiling"
    was_cancelled: bool = False


class ErrorDetails(BaseModel):
    code: int | None = None
    type: str | None = None
    message: str


class RecordInfo(BaseModel):
    metadata: RecordMetadata
    metrics: dict[str, MetricValue]
    error: ErrorDetails | None = None


def _int(value: Any) -> int | None:
    return None if value is None or pd.isna(value) else int(value)


def _stats(values: np.ndarray, unit: str) -> dict[str, Any] | None:
    v = values[~np.isnan(values)]
    if v.size == 0:
        return None
    pct = np.percentile(v, PERCENTILES)
    return {"unit": unit, "avg": float(v.mean()),
            **{f"p{p}": float(x) for p, x in zip(PERCENTILES, pct, strict=True)},
            "min": float(v.min()), "max": float(v.max()), "std": float(v.std()),
            "count": int(v.size), "sum": float(v.sum())}


def _record(row: dict[str, Any], session: int, turn: int, gaps: list[float]) -> RecordInfo:
    start = int(row["start_unix_ns"])
    # from E2E, not the table's float end stamp (a float64 loses ns at today's epoch)
    end = None if pd.isna(row["e2e_ms"]) else start + round(float(row["e2e_ms"]) * 1e6)
    metrics = {tag: MetricValue(value=float(row[column]), unit=unit)
               for tag, (column, unit) in TAGS.items() if not pd.isna(row[column])}
    if gaps:
        metrics[CHUNK_TAG] = MetricValue(value=gaps, unit="ms")
    error = None
    if not row["ok"]:
        kind = row["error_type"] if isinstance(row["error_type"], str) else None
        error = ErrorDetails(code=_int(row["http_status"]), type=kind,
                             message=kind or f"HTTP {_int(row['http_status'])}")
    return RecordInfo(
        metadata=RecordMetadata(
            session_num=session, x_request_id=str(row["request_id"]),
            x_correlation_id=row["session_id"] if isinstance(row["session_id"], str)
            else row["trial"],
            conversation_id=row["scenario_id"], turn_index=turn, request_start_ns=start,
            request_end_ns=end if end is not None else start, worker_id=str(row["job"]),
            was_cancelled=row["error_type"] == "cancelled"),
        metrics=metrics, error=error)


def _aggregate(level: int, requests: pd.DataFrame, gaps: np.ndarray, tables: Tables,
               run_id: str) -> dict[str, Any]:
    ok = requests[requests["ok"].astype(bool)]
    out: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "benchmark_id": run_id}
    for tag, (column, unit) in TAGS.items():
        if (stats := _stats(ok[column].to_numpy(dtype=float), unit)) is not None:
            out[tag] = stats
    if (stats := _stats(gaps, "ms")) is not None:
        out[CHUNK_TAG] = stats
    trials = tables.trials[tables.trials["job"].isin(requests["job"].unique())]
    through = throughput_metrics(requests, trials, float(level))
    n_ok, n_err = len(ok), len(requests) - len(ok)
    for tag, value, unit in (
        ("request_throughput", through["request_throughput"], "requests/sec"),
        ("output_token_throughput", through["output_token_throughput"], "tokens/sec"),
        ("benchmark_duration", through["window_s"], "sec"),
        ("request_count", n_ok, "requests"),
        ("error_request_count", n_err, "requests"),
        ("total_osl", np.nansum(ok["completion_tokens"].to_numpy(dtype=float)), "tokens"),
        ("total_isl", np.nansum(ok["prompt_tokens"].to_numpy(dtype=float)), "tokens"),
    ):
        if not pd.isna(value):
            out[tag] = {"unit": unit, "avg": float(value)}
    starts = requests["start_unix_ns"].dropna()
    ends = requests["end_unix_ns"].dropna()
    if len(starts) and len(ends):
        out["start_time"] = datetime.fromtimestamp(starts.min() / 1e9, UTC).isoformat()
        out["end_time"] = datetime.fromtimestamp(ends.max() / 1e9, UTC).isoformat()
    out["was_cancelled"] = False
    manifest = next(iter(tables.sweeps.values()), None)
    model = (manifest.model if manifest else None) or next(
        (m for m in requests["model"] if isinstance(m, str)), "unknown")
    out["input_config"] = {
        "models": {"items": [{"name": model}]},
        "endpoint": {"urls": [(manifest.base_url if manifest else None) or "unknown"],
                     "type": "chat", "streaming": True, "use_server_token_count": True},
        "datasets": [{"type": "file", "name": "bankbench-tasks",
                      "path": (manifest.tasks_dir if manifest else None) or "unknown"}],
        "phases": [{"type": "concurrency", "name": "profiling", "concurrency": level,
                    "requests": len(requests)}],
    }
    return out


def _file_sets(arm: Arm, tables: Tables, sweep: bool, issues: list[Issue],
               skipped: Counter[str]) -> FileSets:
    requests = tables.requests
    if not len(requests):
        return {}
    gaps_by_row = tables.itl.groupby("request_row")["itl_ms"].agg(list).to_dict()
    requests = requests.assign(_row=np.arange(len(requests)))
    for role, n in Counter(requests.loc[~requests["measured"].astype(bool), "role"]).items():
        skipped[f"{role} requests"] += n
    requests = requests[requests["measured"].astype(bool)]
    sets: FileSets = {}
    for level, group in requests.groupby("level", sort=True):
        group = group.sort_values(["start_unix_ns", "_row"])
        first_start = group.groupby("trial")["start_unix_ns"].min().sort_values(kind="stable")
        session = {trial: i for i, trial in enumerate(first_start.index)}
        turn = group.groupby("trial").cumcount()
        records = [_record(row, session[row["trial"]], int(turn.loc[idx]),
                           [float(g) for g in gaps_by_row.get(row["_row"], [])])
                   for idx, row in zip(group.index, group.to_dict("records"), strict=True)]
        gaps = np.array([g for r in group.loc[group["ok"].astype(bool), "_row"]
                         for g in gaps_by_row.get(r, [])], dtype=float)
        folder = set_folder(arm, int(level), sweep)
        label = "-".join(p for p in (tables.sources[0] if tables.sources else "run",
                                     arm.folder if arm.folder != "." else "",
                                     f"c{level}" if sweep else "") if p)
        aggregate = _aggregate(int(level), group, gaps, tables, label)
        sets[folder] = {RECORDS_FILE: jsonl(records),
                        AGGREGATE_FILE: json.dumps(aggregate, indent=2) + "\n"}
    return sets


def owns(name: str) -> bool:
    return name in (RECORDS_FILE, AGGREGATE_FILE)


def rows(contents: dict[str, str]) -> int:
    return contents[RECORDS_FILE].count("\n")


def export_aiperf(path: Path, out: Path | None = None,
                  log: Callable[[str], None] = lambda _: None) -> ExportManifest:
    """Write the per-request records and aggregates per level (and arm); raises
    AnalysisInputError (one line) when nothing can be exported."""
    return run_export(path, out, FORMAT, _file_sets, owns, rows, log,
                      empty="no LLM request of the agent or evaluator was recorded")
