"""One line of `<trial>/agent/llm_calls.jsonl`: one LLM request, written when it ends."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

LLM_CALLS_FILE = "llm_calls.jsonl"


class CallError(BaseModel):
    type: str = Field(description="Error class: 'timeout', 'http_429', 'connection', ...")
    message: str = Field(description="Human-readable cause. Never contains credentials.")


class LLMCallRecord(BaseModel):
    """Times come from `time.perf_counter_ns()` on the client; tokens from the server's usage."""

    model_config = ConfigDict(extra="allow")

    request_id: str
    trial_name: str
    scenario_id: str
    attempt: int = Field(description="Self-evaluation attempt number, 1-based.")
    step: int = Field(description="ReAct step within the attempt (evaluator calls: 0).")
    role: Literal["agent", "evaluator"]
    model: str
    session_id: str | None = None
    start_unix_ns: int = Field(
        description="Wall clock when the request was handed to the HTTP transport "
        "(time.time_ns()); ttft_ms and e2e_ms count from the same moment."
    )
    ttft_ms: float | None = Field(
        None, description="First chunk carrying content or a tool-call delta; null if none came."
    )
    itl_ms: list[float] = Field(
        default_factory=list, description="Gaps between consecutive content-bearing chunks."
    )
    e2e_ms: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    finish_reason: str | None = None
    http_status: int | None = None
    retries: int = 0
    error: CallError | None = None
    server: dict[str, Any] | None = Field(
        None, description="Server-reported timing / worker ids (Dynamo nvext) when returned."
    )
