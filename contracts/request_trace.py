"""Dynamo's request trace (`DYN_REQUEST_TRACE`, schema `dynamo.request.trace.v1`): one
`request_end` line per request the frontend served. Written by the frontend into
`<state_dir>/request_trace.jsonl` when a profile enables it (cpu-mocker `--set
request_trace=true`); a sweep copies the lines of each level into `c<level>/request_trace.jsonl`
(bankbench/sweep/runner.py); analysis/request_trace.py joins them to llm_calls.jsonl rows by
`x_request_id` (the client's x-request-id header, bankbench's `request_id`).

Only the fields bankbench reads are modelled; the rest are kept (extra="allow").
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

REQUEST_TRACE_FILE = "request_trace.jsonl"


class TraceWorker(BaseModel):
    model_config = ConfigDict(extra="allow")

    prefill_worker_id: int | str | None = None
    decode_worker_id: int | str | None = None


class TraceRequest(BaseModel):
    model_config = ConfigDict(extra="allow")

    request_id: str | None = None
    x_request_id: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    prefill_wait_time_ms: float | None = None
    prefill_time_ms: float | None = None
    ttft_ms: float | None = None
    total_time_ms: float | None = None
    avg_itl_ms: float | None = None
    worker: TraceWorker | None = None


class TraceEvent(BaseModel):
    model_config = ConfigDict(extra="allow")

    event_type: str
    request: TraceRequest | None = None


class TraceLine(BaseModel):
    model_config = ConfigDict(extra="allow")

    event: TraceEvent
