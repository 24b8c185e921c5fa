"""Which worker served each LLM call, and why: the thompson router's decisions joined to
`llm_calls.jsonl` rows.

The router (`dynamo/routers/thompson_router.py`) writes `<stack state dir>/router/
decisions-<start>.jsonl`, one line per request keyed by the frontend's own request id, one
file per stack start; the frontend's request trace (`router/request_trace-<start>.jsonl`,
same folder) maps that id to the client's
`x-request-id`, which the agent sets to its `request_id`. Rows that cannot be joined (the
frontend's readiness probe, a request of another client) keep `request_id` empty.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

DECISIONS = "router/decisions-*.jsonl"
REQUEST_TRACE = "router/request_trace-*.jsonl"


class Candidate(BaseModel):
    model_config = ConfigDict(extra="ignore")

    worker: int
    cost: float
    sampled_log_ttft: float
    mean_ttft_ms: float
    overlap: float
    inflight_tokens: int


class Decision(BaseModel):
    """One line of decisions.jsonl (the fields this reader relies on)."""

    model_config = ConfigDict(extra="ignore")

    request_id: str = Field(description="the frontend's request id")
    session_id: str | None = None
    turn: int | None = None
    osl: int | None = None
    prompt_tokens: int = 0
    chosen: int | None = None
    worker_address: str | None = None
    reason: str | None = None
    ttft_ms: float | None = Field(default=None, description="measured at the router")
    outcome: str | None = None
    attempts: list[dict] = Field(default_factory=list)
    candidates: list[Candidate] = Field(default_factory=list)


def _lines(state_dir: Path, pattern: str) -> list[dict]:
    out = []
    for path in sorted(Path(state_dir).glob(pattern)):
        for line in path.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line cut by a stop mid-write; the others still count
    return out


def client_request_ids(state_dir: Path) -> dict[str, str]:
    """Frontend request id → the client's `x-request-id`, from the frontend's trace."""
    ids = {}
    for row in _lines(state_dir, REQUEST_TRACE):
        req = (row.get("event") or {}).get("request") or {}
        if req.get("request_id") and req.get("x_request_id"):
            ids[req["request_id"]] = req["x_request_id"]
    return ids


def read_decisions(state_dir: Path) -> pd.DataFrame:
    """One row per routed request: client `request_id`, chosen worker, why, and the chosen
    worker's terms (overlap, sampled TTFT, queued output) when it was chosen."""
    client_ids = client_request_ids(state_dir)
    rows = []
    for raw in _lines(state_dir, DECISIONS):
        d = Decision.model_validate(raw)
        chosen = next((c for c in d.candidates if c.worker == d.chosen), None)
        rows.append({
            "request_id": client_ids.get(d.request_id),
            "frontend_request_id": d.request_id,
            "session_id": d.session_id, "turn": d.turn, "osl": d.osl,
            "worker": d.chosen, "worker_address": d.worker_address, "reason": d.reason,
            "router_ttft_ms": d.ttft_ms, "outcome": d.outcome, "retries": len(d.attempts),
            "candidates": len(d.candidates),
            "overlap": chosen.overlap if chosen else None,
            "sampled_log_ttft": chosen.sampled_log_ttft if chosen else None,
            "inflight_tokens": chosen.inflight_tokens if chosen else None,
        })
    return pd.DataFrame(rows)


def join_llm_calls(calls: pd.DataFrame, state_dir: Path) -> pd.DataFrame:
    """`calls` (one row per llm_calls.jsonl record, with `request_id`) plus the router's
    decision columns; calls the router did not see keep NaN there."""
    decisions = read_decisions(state_dir)
    if decisions.empty:
        return calls.assign(worker=pd.NA, reason=pd.NA)
    decisions = decisions.dropna(subset=["request_id"]).drop_duplicates("request_id")
    return calls.merge(decisions, on="request_id", how="left", suffixes=("", "_router"))
