"""The streaming chat client: one OpenAI-compatible request in, one raw-time record out.

Every request streams (`stream=True`, usage included). The record keeps the raw times of the
try that ended the call (send, each content-bearing read, end of stream; see
`contracts/llm_calls.py`); TTFT, ITL and the rest are derived from them by the analysis.
Transient failures (429, 5xx, timeouts, dropped connections, broken streams) are retried with
jittered exponential back-off, and the record says how many retries it took. Other 4xx
answers fail at once. The API key is read from an environment variable and never leaves this
module: error texts are scrubbed of it before they reach a record.

The HTTP details live in `transport.py`, the stream parsing in `sse.py`; this module holds
the retry loop, cancellation and the record.
"""

from __future__ import annotations

import asyncio
import json
import os
import ssl
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx
from tenacity import (
    AsyncRetrying,
    RetryError,
    retry_if_exception,
    stop_after_attempt,
    wait_random_exponential,
)

from agents.options import ClientSettings
from agents.sse import StreamErrorEvent, StreamParser, StreamReply, tool_stream, usage_tokens
from agents.transport import SENDING, SendStamp, ack_now, http_client
from contracts.llm_calls import CallError, LLMCallRecord

DUMMY_API_KEY = "not-needed"  # local servers (Dynamo, llama.cpp) ignore the key
SESSION_HEADER = "x-dynamo-session-id"
SESSION_FINAL_HEADER = "x-dynamo-session-final"

__all__ = ["CallInfo", "ChatResult", "ClientSettings", "LLMCallFailed", "StreamingClient",
           "ToolCallOut"]


@dataclass
class CallInfo:
    """Who is calling: copied into the record and available to annotation templates."""

    trial_name: str
    scenario_id: str
    attempt: int
    step: int
    role: str  # "agent", "evaluator", … (an open set: contracts.llm_calls)
    session_id: str | None
    request_index: int = 0
    turn: int = 0
    session_final: bool = False  # the request that ends the session (`close_session`)


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


# Failures worth a second try but not a third when they come back word for word: a server
# that ends the stream, or errors, the same way twice will do so again (a prompt past its
# context, a request its engine cannot serve). Overload signals (429, 502–504), timeouts and
# dropped connections are retried to the end: those do pass.
REPEAT_STOPS = frozenset({"http_500", "stream_error", "bad_stream"})
# A server shedding load (429 Too Many Requests, 529 Overloaded): counted per request even when a
# retry then succeeds, so a capacity search charges overload to the server's error rate.
OVERLOAD_STATUSES = frozenset({429, 529})


class LLMCallFailed(Exception):
    """The request failed for good; `record` holds what was measured and why."""

    def __init__(self, record: LLMCallRecord, *, retryable: bool, repeated: bool = False,
                 request_chars: int = 0) -> None:
        err = record.error
        super().__init__(f"{err.type}: {err.message}" if err else "LLM call failed")
        self.record = record
        self.retryable = retryable  # True: server/transport trouble that outlived the retries
        self.repeated = repeated  # the last two tries failed identically: retries stopped
        self.request_chars = request_chars  # size of the request body (prompt + tools)


@dataclass
class _Try:
    """One try at a request: its clocks, what its stream said, how it ended."""

    stamp: SendStamp
    reply: StreamReply
    status: int | None = None
    end_ns: int | None = None


class _TryFailed(Exception):
    """One try failed; carries the classified error and the try's partial record."""

    def __init__(self, error: CallError, retryable: bool, tried: _Try) -> None:
        super().__init__(error.message)
        self.error, self.retryable, self.tried = error, retryable, tried
        self.repeated = False

    def signature(self) -> tuple[str, int | None, str] | None:
        if self.error.type not in REPEAT_STOPS:
            return None
        return self.error.type, self.tried.status, self.error.message


RecordSink = Callable[[LLMCallRecord], Awaitable[None] | None]


class StreamingClient:
    """Async streaming chat client that records every request and hands it to `sink`."""

    def __init__(self, settings: ClientSettings, sink: RecordSink | None = None) -> None:
        self.settings = settings
        self._sink = sink
        self.in_flight = 0
        # Set when a request was cancelled under way (Harbor's agent timeout hit mid-call):
        # tells a timeout spent waiting on the server from one spent elsewhere.
        self.cancelled_in_flight = False
        self._api_key = os.environ.get(settings.api_key_env) or DUMMY_API_KEY
        self._http = http_client(settings.base_url, self._api_key, settings.request_timeout_s)
        self._counter = None
        if settings.tokenizer:  # counts for servers that send no usage
            from agents.token_count import TokenCounter

            self._counter = TokenCounter(settings.tokenizer)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def list_models(self) -> list[str]:
        """Model ids of `GET /models`; raises httpx errors as they come."""
        response = await self._http.get("models")
        response.raise_for_status()
        return [str(m.get("id")) for m in response.json().get("data") or ()]

    def scrub(self, text: str) -> str:
        if self._api_key and self._api_key != DUMMY_API_KEY:
            text = text.replace(self._api_key, "***")
        return text

    def _request_extras(self, info: CallInfo, request_id: str) -> tuple[dict, dict]:
        headers = {"x-request-id": request_id, "Content-Type": "application/json"}
        if self.settings.session_header and info.session_id:
            headers[SESSION_HEADER] = info.session_id
            if info.session_final:
                headers[SESSION_FINAL_HEADER] = "true"
        nvext: dict[str, Any] = {}
        if self.settings.server_timing:
            nvext["extra_fields"] = ["worker_id", "timing"]
        if info.session_final:  # no script turn or hint of the agent's is spent on it
            return headers, ({"nvext": nvext} if nvext else {})
        if self.settings.nvext_annotations:
            values = {**info.__dict__}
            nvext["annotations"] = [t.format(**values) for t in self.settings.nvext_annotations]
        hints = {k: v for k, v in (("osl", self.settings.hint_osl),
                                   ("priority", self.settings.hint_priority)) if v is not None}
        if hints:
            nvext["agent_hints"] = hints
        return headers, ({"nvext": nvext} if nvext else {})

    async def chat(self, messages: list[dict[str, Any]], info: CallInfo,
                   **params: Any) -> ChatResult:
        """Stream one completion. `params` go to the API (tools, tool_choice, stop, max_tokens…).

        Raises LLMCallFailed after writing the failure record.
        """
        return await self._counted(messages, info, params, self.settings.max_attempts)

    async def close_session(self, info: CallInfo) -> LLMCallRecord | None:
        """End `info.session_id` on the server: one request of one token carrying
        `x-dynamo-session-final: true`, tried once. Dynamo 1.6.1 reads the header only off a
        request (into its agent context); the agent cannot know its last request before the
        reply, so the close is a call of its own, as Dynamo's agent integrations send it.
        Returns its record (a failure is recorded, never raised); None without a session."""
        if not (self.settings.session_header and info.session_id):
            return None
        info.session_final = True
        try:
            reply = await self._counted([{"role": "user", "content": "."}], info,
                                        {"max_tokens": 1}, 1)
        except LLMCallFailed as exc:
            return exc.record
        return reply.record

    async def _counted(self, messages: list[dict[str, Any]], info: CallInfo,
                       params: dict[str, Any], max_attempts: int) -> ChatResult:
        self.in_flight += 1
        try:
            return await self._chat(messages, info, params, max_attempts)
        except asyncio.CancelledError:
            self.cancelled_in_flight = True
            raise
        finally:
            self.in_flight -= 1

    async def _chat(self, messages: list[dict[str, Any]], info: CallInfo,
                    params: dict[str, Any], max_attempts: int) -> ChatResult:
        request_id = uuid.uuid4().hex
        headers, extra_body = self._request_extras(info, request_id)
        body = json.dumps({"model": self.settings.model, "messages": messages, "stream": True,
                           "stream_options": {"include_usage": True}, **params, **extra_body}
                          ).encode()
        tries = 0
        current: _Try | None = None
        s = self.settings
        last: list[tuple | None] = [None]
        overloaded = [0]

        def retry_this(exc: BaseException) -> bool:
            if isinstance(exc, _TryFailed) and exc.tried.status in OVERLOAD_STATUSES:
                overloaded[0] += 1
            if not (isinstance(exc, _TryFailed) and exc.retryable):
                return False
            signature = exc.signature()
            exc.repeated = signature is not None and signature == last[0]
            last[0] = signature
            return not exc.repeated

        retrying = AsyncRetrying(
            stop=stop_after_attempt(max_attempts),
            wait=wait_random_exponential(multiplier=s.backoff_initial_s, max=s.backoff_max_s),
            retry=retry_if_exception(retry_this),
            reraise=False,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    tries += 1
                    current = _Try(SendStamp.now(), StreamReply())
                    await self._one_try(body, headers, current)
        except asyncio.CancelledError:
            # Cancelled under way: when it was sent, nothing of a stream cut short.
            stamp = current.stamp if current else SendStamp.now()
            record = self._record(request_id, info, _Try(stamp, StreamReply()), tries - 1,
                                  CallError(type="cancelled", message="cancelled mid-call"))
            await self._emit(record)
            raise
        except (RetryError, _TryFailed) as exc:
            failed = exc.last_attempt.exception() if isinstance(exc, RetryError) else exc
            assert isinstance(failed, _TryFailed)
            record = self._record(request_id, info, failed.tried, tries - 1, failed.error)
            record.overloaded = overloaded[0]
            await self._emit(record)
            raise LLMCallFailed(record, retryable=failed.retryable, repeated=failed.repeated,
                                request_chars=len(body)) from None
        assert current is not None
        record = self._record(request_id, info, current, tries - 1)
        record.tool_stream = tool_stream(current.reply, params)
        record.overloaded = overloaded[0]
        reply = current.reply
        if self._counter is not None and record.token_source is None:
            record.prompt_tokens = self._counter.prompt(messages, params.get("tools"))
            record.completion_tokens = self._counter.completion(
                "".join(reply.content), list(reply.tools.values()))
            record.token_source = "client"
        await self._emit(record)
        tool_calls = [
            ToolCallOut(id=t.get("id") or f"call_{request_id[:8]}_{i}", name=t.get("name", ""),
                        arguments=t.get("arguments", ""))
            for i, t in sorted(reply.tools.items())
        ]
        return ChatResult("".join(reply.content), tool_calls, reply.finish_reason, record)

    async def _emit(self, record: LLMCallRecord) -> None:
        if self._sink is not None:
            result = self._sink(record)
            if result is not None:
                await result

    async def _one_try(self, body: bytes, headers: dict[str, str], tried: _Try) -> None:
        """Send once and read the stream into `tried`; raise _TryFailed, classified."""
        parser = StreamParser()
        tried.reply = parser.reply
        sending = SENDING.set(tried.stamp)
        try:
            request = self._http.build_request("POST", "chat/completions", content=body,
                                               headers=headers)
            response = await self._http.send(request, stream=True)
            SENDING.reset(sending)
            sending = None
            tried.status = response.status_code
            try:
                if response.status_code >= 400:
                    await response.aread()
                    raise self._status_failure(response, tried)
                if self.settings.quick_ack:
                    ack_now(response)
                async for piece in response.aiter_bytes():
                    # Past `[DONE]` the parser ignores the rest; reading on to the end of the
                    # body lets an HTTP/1.1 connection go back to the pool.
                    parser.feed(piece, time.perf_counter_ns())
                parser.close(time.perf_counter_ns())
            finally:
                await response.aclose()
        except _TryFailed:
            raise
        except StreamErrorEvent as exc:  # an error event inside a 200 stream
            code = exc.code
            retryable = code is None or code == 429 or code >= 500
            raise self._failure("stream_error", exc, retryable, tried, code) from None
        except httpx.TimeoutException as exc:
            raise self._failure("timeout", exc, True, tried) from None
        except (httpx.HTTPError, httpx.StreamError, ssl.SSLError, OSError) as exc:
            raise self._failure("connection", exc, True, tried) from None
        except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, a chunk of odd shape
            raise self._failure("bad_stream", exc, True, tried) from None
        finally:
            if sending is not None:
                SENDING.reset(sending)
        tried.end_ns = parser.reply.done_ns
        if parser.reply.finish_reason is None and parser.reply.usage is None:
            # The body ended cleanly but the completion never finished: a cut stream.
            err = CallError(type="bad_stream", message="stream ended before a finish_reason")
            raise _TryFailed(err, True, tried)

    def _status_failure(self, response: httpx.Response, tried: _Try) -> _TryFailed:
        code = response.status_code
        text = response.text.strip() or response.reason_phrase
        message = self.scrub(f"HTTP {code}: {text}")[:500]
        tried.end_ns = time.perf_counter_ns()
        return _TryFailed(CallError(type=f"http_{code}", message=message),
                          code == 429 or code >= 500, tried)

    def _failure(self, kind: str, exc: BaseException, retryable: bool, tried: _Try,
                 code: int | None = None) -> _TryFailed:
        tried.end_ns = time.perf_counter_ns()
        if code is not None:
            tried.status = code
        message = self.scrub(f"{type(exc).__name__}: {exc}")[:500]
        return _TryFailed(CallError(type=kind, message=message), retryable, tried)

    def _record(self, request_id: str, info: CallInfo, tried: _Try, retries: int,
                error: CallError | None = None) -> LLMCallRecord:
        reply = tried.reply
        prompt, completion, cached = usage_tokens(reply.usage)
        return LLMCallRecord(
            request_id=request_id, trial_name=info.trial_name, scenario_id=info.scenario_id,
            attempt=info.attempt, turn=info.turn, step=info.step, role=info.role,
            model=self.settings.model, session_id=info.session_id,
            start_unix_ns=tried.stamp.start_unix_ns,
            send_ns=tried.stamp.send_ns if tried.stamp.sent else None,
            read_ns=reply.read_ns, end_ns=tried.end_ns,
            # A kind no read carried is an empty list (the record stays small).
            read_content_chars=_nonzero(reply.read_chars[0]),
            read_reasoning_chars=_nonzero(reply.read_chars[1]),
            read_tool_call_chars=_nonzero(reply.read_chars[2]),
            prompt_tokens=prompt, completion_tokens=completion, cached_tokens=cached,
            token_source="server" if (prompt, completion) != (None, None) else None,
            finish_reason=reply.finish_reason, http_status=tried.status, retries=retries,
            error=error, server=reply.server or None,
        )


def _nonzero(sizes: list[int]) -> list[int]:
    return sizes if any(sizes) else []
