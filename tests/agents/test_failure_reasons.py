"""A trial's reason for a failed LLM call names the likely cause; no server needed."""

from __future__ import annotations

from agents.episode import classify_llm_failure
from agents.llm import LLMCallFailed
from analysis.synthetic import record
from contracts.llm_calls import CallError


def _failed(kind: str, status: int | None, message: str, *, retryable: bool,
            repeated: bool = False, request_chars: int = 46_000) -> LLMCallFailed:
    rec = record(error=CallError(type=kind, message=message), http_status=status,
                 prompt_tokens=None, completion_tokens=None, retries=1 if repeated else 0)
    return LLMCallFailed(rec, retryable=retryable, repeated=repeated,
                         request_chars=request_chars)


def test_context_overflow_names_the_prompt_size():
    status, reason = classify_llm_failure(_failed(
        "http_400", 400, "HTTP 400: This model's maximum context length is 8192 tokens",
        retryable=False))
    assert status == "agent_error"
    assert "prompt ~11.5k tokens" in reason and "context may be smaller" in reason


def test_a_stream_cut_the_same_way_twice_is_named_and_not_retried_further():
    status, reason = classify_llm_failure(_failed(
        "bad_stream", 200, "stream ended before a finish_reason", retryable=True,
        repeated=True))
    assert status == "infra_error"
    assert "same way twice in a row" in reason and "prompt ~11.5k tokens" in reason


def test_an_unrelated_failure_gets_no_guess():
    _, reason = classify_llm_failure(_failed("http_503", 503, "HTTP 503: busy",
                                             retryable=True))
    assert "prompt ~" not in reason and "after 1 tries" in reason
