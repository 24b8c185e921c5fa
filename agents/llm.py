"""The streaming chat client: one OpenAI-compatible request in, one timing record out.

Every request streams (`stream=True`, usage included) so that time to first token and the gaps
between tokens are measured on the client with `perf_counter_ns()`. Transient failures (429,
5xx, timeouts, dropped connections, broken streams) are retried with jittered exponential
back-off; the record then carries the timing of the attempt that succeeded and how many retries
it took. Other 4xx answers fail at once. The API key is read from an environment variable and
never leaves this module: error texts are scrubbed of it before they reach a record.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import json
import os
import socket
import ssl
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
import openai
from pydantic import BaseModel, Field
from tenacity import (
    AsyncRetrying,
    RetryError,
    retry_if_exception,
    stop_after_attempt,
    wait_random_exponential,
)

from contracts.llm_calls import CallError, LLMCallRecord

DUMMY_API_KEY = "not-needed"  # local servers (Dynamo, llama.cpp) ignore the key
SESSION_HEADER = "x-dynamo-session-id"


class ClientSettings(BaseModel):
    """How to reach the server and how hard to try."""

    base_url: str = Field(description="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1")
    model: str = Field(description="Model name as the server lists it.")
    api_key_env: str = Field(
        "OPENAI_API_KEY", description="Environment variable holding the API key (never stored)."
    )
    request_timeout_s: float = Field(120.0, gt=0, description="Connect/read timeout per attempt.")
    max_attempts: int = Field(4, ge=1, description="Attempts per request, first one included.")
    backoff_initial_s: float = Field(0.5, ge=0, description="Back-off scale before a retry.")
    backoff_max_s: float = Field(8.0, ge=0, description="Longest back-off between attempts.")
    session_header: bool = Field(True, description=f"Send `{SESSION_HEADER}` per trial.")
    server_timing: bool = Field(
        True, description="Ask Dynamo for worker ids and timing (nvext extra_fields)."
    )
    quick_ack: bool = Field(
        True, description="Acknowledge each response head at once (Linux TCP_QUICKACK), so a "
        "server that leaves Nagle on cannot hold the first token back for a delayed ACK.",
    )
    nvext_annotations: list[str] = Field(
        default_factory=list,
        description="nvext annotation templates, formatted with the call's fields "
        "({scenario_id}, {trial_name}, {session_id}, {attempt}, {step}, {role}, {request_index}).",
    )


@dataclass
class CallInfo:
    """Who is calling: copied into the record and available to annotation templates."""

    trial_name: str
    scenario_id: str
    attempt: int
    step: int
    role: str  # "agent" | "evaluator"
    session_id: str | None
    request_index: int = 0


@dataclass
class ToolCallOut:
    id: str
    name: str
    arguments: str  # raw JSON text as the model produced it


@dataclass
class ChatResult:
    content: str
    tool_calls: list[ToolCallOut]
    finish_reason: str | None
    record: LLMCallRecord


class LLMCallFailed(Exception):
    """The request failed for good; `record` holds what was measured and why."""

    def __init__(self, record: LLMCallRecord, *, retryable: bool) -> None:
        err = record.error
        super().__init__(f"{err.type}: {err.message}" if err else "LLM call failed")
        self.record = record
        self.retryable = retryable  # True: server/transport trouble that outlived the retries


class _AttemptError(Exception):
    """One attempt failed; carries the classified error and partial timing."""

    def __init__(self, error: CallError, status: int | None, retryable: bool, partial: dict):
        super().__init__(error.message)
        self.error, self.status, self.retryable, self.partial = error, status, retryable, partial


@dataclass
class _StreamState:
    t0: int  # perf_counter_ns when the request went to the transport (see _stamp_send)
    start_unix_ns: int
    content: list[str] = field(default_factory=list)
    tools: dict[int, dict[str, str]] = field(default_factory=dict)
    token_times: list[int] = field(default_factory=list)
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    server: dict[str, Any] = field(default_factory=dict)
    done: bool = False


# The attempt whose request the HTTP client is about to send, per task: lets the client's
# request hook stamp that attempt's start (each asyncio task has its own context).
_SENDING: contextvars.ContextVar[_StreamState | None] = contextvars.ContextVar(
    "bankbench_sending", default=None)


async def _stamp_send(request: httpx2.Request) -> None:
    """Start the attempt's clocks as the request is handed to the transport.

    TTFT and e2e run from here rather than from the call to `chat`: what came before is the
    harness's own work (JSON-encoding the history and tool schemas, the SDK building its
    request) and, with many trials on one event loop, waiting for that loop; neither is the
    server's latency, and a load generator with its own process per user would not pay it.
    From here on everything a real client waits for is counted: the pool handing out (or
    opening) a connection, writing the request, the server, and reading the answer.
    """
    state = _SENDING.get()
    if state is not None:
        state.t0 = time.perf_counter_ns()
        state.start_unix_ns = time.time_ns()


RecordSink = Callable[[LLMCallRecord], Awaitable[None] | None]


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """The SDK's default TLS context, built once per process. Building it reads the CA bundle
    (~30 ms of CPU); every trial has its own client, so at high concurrency that was a large
    share of the agent's own CPU. The context is only read once built, so clients share it."""
    return httpx2.create_ssl_context()


class StreamingClient:
    """Async streaming chat client that measures every request and hands its record to `sink`."""

    def __init__(self, settings: ClientSettings, sink: RecordSink | None = None) -> None:
        self.settings = settings
        self._sink = sink
        self.in_flight = 0
        # Set when a request was cancelled under way (Harbor's agent timeout hit mid-call):
        # tells a timeout spent waiting on the server from one spent elsewhere.
        self.cancelled_in_flight = False
        self._api_key = os.environ.get(settings.api_key_env) or DUMMY_API_KEY
        self._client = openai.AsyncOpenAI(
            base_url=settings.base_url,
            api_key=self._api_key,
            max_retries=0,  # retries are ours, so they are counted
            timeout=settings.request_timeout_s,
            http_client=openai.DefaultAsyncHttpxClient(
                verify=_ssl_context(), event_hooks={"request": [_stamp_send]}),
        )

    async def aclose(self) -> None:
        await self._client.close()

    def _scrub(self, text: str) -> str:
        if self._api_key and self._api_key != DUMMY_API_KEY:
            text = text.replace(self._api_key, "***")
        return text

    def _request_extras(self, info: CallInfo, request_id: str) -> tuple[dict, dict]:
        headers = {"x-request-id": request_id}
        if self.settings.session_header and info.session_id:
            headers[SESSION_HEADER] = info.session_id
        nvext: dict[str, Any] = {}
        if self.settings.server_timing:
            nvext["extra_fields"] = ["worker_id", "timing"]
        if self.settings.nvext_annotations:
            values = {**info.__dict__}
            nvext["annotations"] = [t.format(**values) for t in self.settings.nvext_annotations]
        return headers, ({"nvext": nvext} if nvext else {})

    async def chat(
        self,
        messages: list[dict[str, Any]],
        info: CallInfo,
        **params: Any,
    ) -> ChatResult:
        """Stream one completion. `params` go to the API (tools, tool_choice, stop, max_tokens…).

        Raises LLMCallFailed after writing the failure record.
        """
        self.in_flight += 1
        try:
            return await self._chat(messages, info, params)
        except asyncio.CancelledError:
            self.cancelled_in_flight = True
            raise
        finally:
            self.in_flight -= 1

    async def _chat(self, messages: list[dict[str, Any]], info: CallInfo,
                    params: dict[str, Any]) -> ChatResult:
        request_id = uuid.uuid4().hex
        headers, extra_body = self._request_extras(info, request_id)
        start_unix_ns = time.time_ns()
        attempts = 0
        s = self.settings
        retrying = AsyncRetrying(
            stop=stop_after_attempt(s.max_attempts),
            wait=wait_random_exponential(multiplier=s.backoff_initial_s, max=s.backoff_max_s),
            retry=retry_if_exception(lambda e: isinstance(e, _AttemptError) and e.retryable),
            reraise=False,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    attempts += 1
                    start_unix_ns = time.time_ns()  # until the request hook restamps it
                    state, status = await self._one_attempt(messages, params, headers, extra_body)
                    start_unix_ns = state.start_unix_ns
        except asyncio.CancelledError:
            record = self._record(request_id, info, start_unix_ns, None, status=None,
                                  retries=attempts - 1,
                                  error=CallError(type="cancelled", message="cancelled mid-call"))
            await self._emit(record)
            raise
        except (RetryError, _AttemptError) as exc:
            last = exc.last_attempt.exception() if isinstance(exc, RetryError) else exc
            assert isinstance(last, _AttemptError)
            if last.partial.get("state") is not None:
                start_unix_ns = last.partial["state"].start_unix_ns
            record = self._record(
                request_id, info, start_unix_ns, last.partial.get("state"), status=last.status,
                retries=attempts - 1, error=last.error,
            )
            await self._emit(record)
            raise LLMCallFailed(record, retryable=last.retryable) from None
        record = self._record(
            request_id, info, start_unix_ns, state, status=status, retries=attempts - 1
        )
        await self._emit(record)
        tool_calls = [
            ToolCallOut(id=t.get("id") or f"call_{request_id[:8]}_{i}", name=t.get("name", ""),
                        arguments=t.get("arguments", ""))
            for i, t in sorted(state.tools.items())
        ]
        return ChatResult("".join(state.content), tool_calls, state.finish_reason, record)

    async def _emit(self, record: LLMCallRecord) -> None:
        if self._sink is not None:
            result = self._sink(record)
            if result is not None:
                await result

    async def _one_attempt(
        self, messages: list[dict], params: dict, headers: dict, extra_body: dict
    ) -> tuple[_StreamState, int]:
        state = _StreamState(t0=time.perf_counter_ns(), start_unix_ns=time.time_ns())
        status: int | None = None
        sending = _SENDING.set(state)
        try:
            # The SDK's typed `chat.completions.create` walks the whole body (history and
            # every tool schema) through its TypedDict transform on each request, ~10 ms of
            # CPU with the 20 bank tools: the largest per-request cost of the agent. Our
            # messages and params are plain JSON already, so post them as they are, with the
            # same auth and error classes as `create`. The SDK hands back the raw response
            # (HTTP errors already raised as APIStatusError) and the stream is read here.
            body = {"model": self.settings.model, "messages": messages, "stream": True,
                    "stream_options": {"include_usage": True}, **params, **extra_body}
            response = await self._client.post(
                "/chat/completions", cast_to=httpx2.Response, body=body,
                options={"headers": headers, "security": {"bearer_auth": True}}, stream=True,
            )
            _SENDING.reset(sending)
            sending = None
            status = response.status_code
            if self.settings.quick_ack:
                _ack_now(response)
            try:
                await _read_stream(response, state)
            finally:
                await response.aclose()
            state.done = True
        except openai.APIStatusError as exc:
            code = exc.status_code
            retryable = code == 429 or code >= 500
            raise self._attempt_error(f"http_{code}", exc, code, retryable, state) from None
        except openai.APITimeoutError as exc:
            raise self._attempt_error("timeout", exc, status, True, state) from None
        except openai.APIConnectionError as exc:
            cause = exc.__cause__ or exc
            raise self._attempt_error("connection", cause, status, True, state) from None
        except StreamErrorEvent as exc:  # an error event inside a 200 stream
            code = exc.code
            retryable = code is None or code == 429 or code >= 500
            raise self._attempt_error("stream_error", exc, code or status, retryable, state) \
                from None
        except httpx2.TimeoutException as exc:  # while reading the body
            raise self._attempt_error("timeout", exc, status, True, state) from None
        except (httpx2.RequestError, ssl.SSLError, anyio.EndOfStream) as exc:
            raise self._attempt_error("connection", exc, status, True, state) from None
        except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, a chunk of odd shape
            raise self._attempt_error("bad_stream", exc, status, True, state) from None
        finally:
            if sending is not None:
                _SENDING.reset(sending)
        if state.finish_reason is None and state.usage is None:
            # The body ended cleanly but the completion never finished: a cut stream.
            err = CallError(type="bad_stream", message="stream ended before a finish_reason")
            raise _AttemptError(err, status, True, {"state": state})
        assert status is not None
        return state, status

    def _attempt_error(
        self, kind: str, exc: BaseException, status: int | None, retryable: bool, state
    ) -> _AttemptError:
        message = self._scrub(f"{type(exc).__name__}: {exc}")[:500]
        return _AttemptError(CallError(type=kind, message=message), status, retryable,
                             {"state": state})

    def _record(
        self,
        request_id: str,
        info: CallInfo,
        start_unix_ns: int,
        state: _StreamState | None,
        *,
        status: int | None,
        retries: int,
        error: CallError | None = None,
    ) -> LLMCallRecord:
        ttft = itl = e2e = None
        prompt = completion = cached = None
        finish = None
        server = None
        if state is not None:
            times = state.token_times
            if times:
                ttft = (times[0] - state.t0) / 1e6
                itl = [(b - a) / 1e6 for a, b in zip(times, times[1:], strict=False)]
            e2e = (time.perf_counter_ns() - state.t0) / 1e6
            finish = state.finish_reason
            server = state.server or None
            if state.usage is not None:
                prompt, completion, cached = _usage_tokens(state.usage)
        return LLMCallRecord(
            request_id=request_id,
            trial_name=info.trial_name,
            scenario_id=info.scenario_id,
            attempt=info.attempt,
            step=info.step,
            role=info.role,  # type: ignore[arg-type]
            model=self.settings.model,
            session_id=info.session_id,
            start_unix_ns=start_unix_ns,
            ttft_ms=ttft,
            itl_ms=itl or [],
            e2e_ms=e2e,
            prompt_tokens=prompt,
            completion_tokens=completion,
            cached_tokens=cached,
            finish_reason=finish,
            http_status=status,
            retries=retries,
            error=error,
            server=server,
        )


def _ack_now(response: Any) -> None:
    """Send the ACK for the response head now instead of up to 40 ms later.

    Dynamo 1.6.1's HTTP frontend does not set TCP_NODELAY, so Nagle keeps its first SSE chunk
    in the kernel until the client acknowledges the head. On a reused (keep-alive) connection
    Linux delays that ACK (40 ms minimum), which pinned the first token to about head + 40 ms
    while the server's own TTFT said 18 ms. TCP_QUICKACK flushes the pending ACK; it is a
    no-op where the option or the socket is not available (other OSes, test transports).
    """
    quickack = getattr(socket, "TCP_QUICKACK", None)
    stream = (getattr(response, "extensions", None) or {}).get("network_stream")
    if quickack is None or stream is None:
        return
    sock = stream.get_extra_info("socket")
    if sock is None:
        return
    try:
        sock.setsockopt(socket.IPPROTO_TCP, quickack, 1)
    except OSError:
        pass  # not a TCP socket (a unix socket or a proxy stream): nothing to hurry


class StreamErrorEvent(Exception):
    """The server reported an error inside a 200 stream (`{"error": …}` or `event: error`)."""

    def __init__(self, message: str, code: int | None) -> None:
        super().__init__(message)
        self.code = code


async def _read_stream(response: httpx2.Response, state: _StreamState) -> None:
    """Read the SSE body into `state`, stamping content-bearing events as their bytes arrive.

    Read by hand rather than through the SDK's typed stream: building a ChatCompletionChunk
    model per event cost the client more CPU than anything else per token (about 0.1 ms per
    chunk, more than half of its time at concurrency 64), and on a loop shared by many trials
    that delay lands in everyone's TTFT and gaps. The record needs only a few plain fields.
    One stamp per read covers every event in it: they arrived together.
    """
    reader = _SSEReader()
    done = False
    async for piece in response.aiter_bytes():
        if done:
            # Past `[DONE]`: read on to the end of the body all the same, so that an
            # HTTP/1.1 connection goes back to the pool instead of being closed.
            continue
        now = time.perf_counter_ns()
        for event, data in reader.feed(piece):
            if data.startswith(b"[DONE]"):
                done = True
                break
            _absorb_event(state, event, data, now)
    if not done:
        for event, data in reader.feed(b"\n\n"):  # an event cut off by the end of the body
            if not data.startswith(b"[DONE]"):
                _absorb_event(state, event, data, time.perf_counter_ns())


class _SSEReader:
    """Incremental server-sent-events parser: yields (event name, data bytes) per event.

    Lines end in LF, CRLF or CR; `data:` lines of one event are joined by LF; comments and
    `id:`/`retry:` fields are skipped. The OpenAI `[DONE]` sentinel comes out as data.
    """

    def __init__(self) -> None:
        self._tail = b""
        self._cr = False  # the previous piece ended in CR: a leading LF belongs to it
        self._event: bytes | None = None
        self._data: list[bytes] = []

    def feed(self, piece: bytes) -> list[tuple[str | None, bytes]]:
        if self._cr and piece.startswith(b"\n"):
            piece = piece[1:]
        self._cr = piece.endswith(b"\r")
        text = self._tail + piece
        if b"\r" in text:
            text = text.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = text.split(b"\n")
        self._tail = lines.pop()
        out: list[tuple[str | None, bytes]] = []
        for line in lines:
            if not line:
                if self._data:
                    data = b"\n".join(self._data)
                    out.append((self._event.decode() if self._event else None, data))
                self._event, self._data = None, []
                continue
            name, _, value = line.partition(b":")
            if value.startswith(b" "):
                value = value[1:]
            if name == b"data":
                self._data.append(value)
            elif name == b"event":
                self._event = value
        return out


def _absorb_event(state: _StreamState, event: str | None, data: bytes, now: int) -> None:
    """Parse one event's data and fold it in; error events and odd shapes raise."""
    try:
        chunk = json.loads(data)
    except json.JSONDecodeError:
        if event == "error":
            raise StreamErrorEvent(data.decode(errors="replace")[:300], None) from None
        raise
    if event == "error" or (isinstance(chunk, dict) and chunk.get("error")):
        error = chunk.get("error", chunk) if isinstance(chunk, dict) else chunk
        message = error.get("message") if isinstance(error, dict) else error
        code = error.get("code") if isinstance(error, dict) else None
        raise StreamErrorEvent(message if isinstance(message, str) and message
                                else "An error occurred during streaming",
                                code if isinstance(code, int) else None)
    try:
        _absorb(state, chunk, now)
    except (AttributeError, TypeError, KeyError) as exc:
        raise ValueError(f"unexpected chunk shape: {type(exc).__name__}: {exc}") from None


def _absorb(state: _StreamState, chunk: dict[str, Any], now: int) -> None:
    """Fold one streamed chunk into the state, stamping content-bearing chunks."""
    bearing = False
    for choice in chunk.get("choices") or ():
        delta = choice.get("delta")
        if delta:
            content = delta.get("content")
            if content:
                state.content.append(content)
                bearing = True
            if delta.get("reasoning_content"):
                bearing = True
            for tc in delta.get("tool_calls") or ():
                slot = state.tools.setdefault(tc.get("index") or 0, {})
                if tc.get("id"):
                    slot["id"] = tc["id"]
                fn = tc.get("function")
                if fn:
                    if fn.get("name"):
                        slot["name"] = slot.get("name", "") + fn["name"]
                    if fn.get("arguments"):
                        slot["arguments"] = slot.get("arguments", "") + fn["arguments"]
                bearing = True
        if choice.get("finish_reason"):
            state.finish_reason = choice["finish_reason"]
    if bearing:
        state.token_times.append(now)
    usage = chunk.get("usage")
    if usage is not None:
        state.usage = usage
    nvext = chunk.get("nvext")
    if isinstance(nvext, dict):
        state.server.update(nvext)


def _usage_tokens(usage: dict[str, Any]) -> tuple[int | None, int | None, int | None]:
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return usage.get("prompt_tokens"), usage.get("completion_tokens"), cached
