"""One line of `<trial>/agent/llm_calls.jsonl`: one LLM request, written when it ends.

The record holds raw times only, integer nanoseconds from the client's `perf_counter_ns()`
(plus one wall-clock stamp to place the request in time): when the request was handed to the
transport (`send_ns`), each network read that carried content, reasoning or a tool-call delta
(`read_ns`) with what it carried (`read_*_chars`, parallel to `read_ns`), and when the stream
ended (`end_ns`). Every timing metric (TTFT, ITL, TPOT, E2E, tok/s) is derived from these in
`analysis/metrics/latency.py`. Flat parallel lists rather than one object per read: a nested
list per read made the record ~2.5x slower to parse, and analysis parses 100,000s of them.

Records written before raw times existed carry `ttft_ms`/`itl_ms`/`e2e_ms` instead; they load
as equivalent raw times (send at 0, reads at the cumulative offsets, end at e2e), so every
reader sees one shape. Their reads' sizes are unknown (`sizes_known` false).

Any agent can write this file, so every number is bounded (`contracts/bounds.py`): a record
holding one out of range is not a valid record, and readers count it as unreadable.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from contracts.bounds import COUNT_MAX, LIST_MAX, NS_MAX, Count, HttpStatus, Millis, Nanos

LLM_CALLS_FILE = "llm_calls.jsonl"

# Who calls the LLM. The set is open (a simulated customer, a judge …); analysis keeps each
# role apart and measures the system under test on the first two only.
AGENT_ROLE, EVALUATOR_ROLE, USER_SIMULATOR_ROLE = "agent", "evaluator", "user_simulator"
# The one request that ends a trial's server session (`x-dynamo-session-final: true`): the
# harness's, not the agent's, so never measured.
SESSION_CLOSE_ROLE = "session_close"
MEASURED_ROLES = frozenset({AGENT_ROLE, EVALUATOR_ROLE})

# Bounds on what a record keeps of a reply's tool calls: enough for any real call, while a
# runaway reply (hundreds of calls, a 1 MB argument) cannot bloat every line of the log.
CALLS_KEPT = 64
ARGUMENTS_KEPT = 4096


class StreamedCall(BaseModel):
    """One tool call as the stream delivered it: its deltas merged by index."""

    index: Annotated[int, Field(ge=-COUNT_MAX, le=COUNT_MAX)] = Field(
        description="The index its deltas carried (deltas without one merge into 0 and are "
        "counted in `unindexed_deltas`).")
    ids: list[str] = Field(default_factory=list, max_length=LIST_MAX,
                           description="Distinct ids its deltas carried, in order (one is "
                           "expected; none or two are integrity failures).")
    name: str = ""
    arguments: str = Field("", description=f"Argument text as streamed, its first "
                                           f"{ARGUMENTS_KEPT} characters.")
    arguments_chars: Count = Field(0, description="Length of the whole argument text.")


class ToolStream(BaseModel):
    """What a request offered and its stream said about tool calls: the recorded inputs of the
    tool-call integrity classes (analysis/metrics/integrity.py); the reply's text is in the
    trajectory (same request_id)."""

    offered: Count = Field(description="Tools the request carried (0: none, e.g. text mode).")
    choice: str | None = Field(None, description="tool_choice as sent: auto | required | none "
                               "| the name of a forced function; None: not sent.")
    calls: list[StreamedCall] = Field(
        default_factory=list, max_length=LIST_MAX,
        description=f"The reply's tool calls by index, the first {CALLS_KEPT}.")
    n_calls: Count = Field(0, description="Tool calls the reply held, kept or not.")
    unindexed_deltas: Count = Field(0, description="Tool-call deltas that carried no index.")
    done: bool = Field(description="The stream ended with `[DONE]`.")


class CallError(BaseModel):
    type: str = Field(description="Error class: 'timeout', 'http_429', 'connection', ...")
    message: str = Field(description="Human-readable cause. Never contains credentials.")


class LLMCallRecord(BaseModel):
    """Times are `perf_counter_ns()` on the client; tokens are the server's usage (None when
    the server sent none: unknown, never 0)."""

    model_config = ConfigDict(extra="allow")

    request_id: str
    trial_name: str
    scenario_id: str
    attempt: Count = Field(description="Self-evaluation attempt number, 1-based.")
    turn: Count = Field(0, description="Conversation turn (customer message), 0-based; always 0 "
                                     "in the single-turn protocol.")
    step: Count = Field(description="ReAct step within the attempt (evaluator calls: 0).")
    role: str = Field(description="Caller: 'agent', 'evaluator', or another such as "
                                  "'user_simulator' (kept apart by analysis).")
    model: str
    session_id: str | None = None
    start_unix_ns: Nanos = Field(
        description="Wall clock (time.time_ns()) at `send_ns`: places the request in time.")
    send_ns: Nanos | None = Field(
        None, description="perf_counter_ns() when the request was handed to the HTTP "
        "transport (before a pooled connection is taken or opened and the request written). "
        "None when the call was cancelled before it was sent.")
    read_ns: list[Nanos] = Field(
        default_factory=list, max_length=LIST_MAX,
        description="perf_counter_ns() when each network read returned that carried at least "
        "one content, reasoning or tool-call delta, in order. The role-only first chunk and "
        "the closing finish/usage chunks carry none and are not listed.")
    read_content_chars: list[Count] = Field(
        default_factory=list, max_length=LIST_MAX, description="Content characters per read "
        "(parallel to read_ns); empty when no read carried content.")
    read_reasoning_chars: list[Count] = Field(
        default_factory=list, max_length=LIST_MAX,
        description="Reasoning characters per read; empty when none.")
    read_tool_call_chars: list[Count] = Field(
        default_factory=list, max_length=LIST_MAX, description="Tool-call name + argument "
        "characters per read; empty when no read carried a tool-call delta.")
    end_ns: Nanos | None = Field(
        None, description="perf_counter_ns() when the stream ended: the read carrying "
        "`[DONE]` (or the end of the body without one); for a failed try, when the failure "
        "was seen. None when nothing was sent.")
    prompt_tokens: Count | None = None
    completion_tokens: Count | None = None
    cached_tokens: Count | None = None
    token_source: Literal["server", "client"] | None = Field(
        None, description="Who counted prompt_tokens/completion_tokens: 'server' (its usage), "
        "'client' (the agent's --ak tokenizer, for a server that sent no usage; without the "
        "chat template's tokens), None (nobody: counts unknown).")
    finish_reason: str | None = None
    http_status: HttpStatus | None = None
    retries: Count = 0
    overloaded: Count = Field(
        0, description="Tries of this request the server answered HTTP 429 or 529 (shedding "
        "load), whether a retry then succeeded or not.")
    error: CallError | None = None
    server: dict[str, Any] | None = Field(
        None, description="Server-reported timing / worker ids (Dynamo nvext) when returned."
    )
    tool_stream: ToolStream | None = Field(
        None, description="Tools offered and the tool calls as streamed; None in records "
        "written before it (integrity classes then unmeasured).")
    # Records written before raw times: read, converted, never written again.
    sizes_known: bool = Field(True, exclude=True)
    ttft_ms: Millis | None = Field(None, exclude=True)
    itl_ms: list[Millis] | None = Field(None, exclude=True, max_length=LIST_MAX)
    e2e_ms: Millis | None = Field(None, exclude=True)

    @model_validator(mode="after")
    def _counts_of_older_records(self) -> LLMCallRecord:
        # Records from before token_source: any count they hold came from the server.
        if self.token_source is None and (self.prompt_tokens, self.completion_tokens) != (
                None, None):
            self.token_source = "server"
        return self

    @model_validator(mode="after")
    def _raw_times_from_old_fields(self) -> LLMCallRecord:
        if self.send_ns is None and (self.ttft_ms is not None or self.e2e_ms is not None):
            self.send_ns = 0
            self.sizes_known = False
            if self.ttft_ms is not None:
                at = self.ttft_ms
                times = [at]
                for gap in self.itl_ms or ():
                    at += gap
                    times.append(at)
                self.read_ns = [round(t * 1e6) for t in times]
            if self.e2e_ms is not None:
                self.end_ns = round(self.e2e_ms * 1e6)
            if max([*self.read_ns, self.end_ns or 0]) > NS_MAX:
                raise ValueError("times add up past the bound on a clock reading")
        return self
