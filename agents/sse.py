"""The chat-completion stream reader: bytes as they come off the network in, raw times out.

Pure: no I/O and no clock. The caller feeds each network read with the `perf_counter_ns()`
it took when the read returned; the reader splits server-sent events, folds each chunk into
the reply (text, tool calls, usage, server timing) and keeps one `Read` per network read that
carried content, reasoning or a tool-call delta — the raw times every timing metric is later
derived from (analysis/metrics/latency.py). One stamp covers every event of a read: they
arrived together.

Hand-written rather than the SDK's typed stream or an SSE library: building a typed chunk
model per event cost the client more CPU than anything else per token (about 0.1 ms per
chunk), and on an event loop shared by many trials that delay lands in everyone's TTFT and
gaps. The record needs only a few plain fields.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from contracts.llm_calls import ARGUMENTS_KEPT, CALLS_KEPT, StreamedCall, ToolStream


class StreamErrorEvent(Exception):
    """The server reported an error inside a 200 stream (`{"error": …}` or `event: error`)."""

    def __init__(self, message: str, code: int | None) -> None:
        super().__init__(message)
        self.code = code


class SSEReader:
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


@dataclass
class StreamReply:
    """What one streamed completion said, and when its content-bearing reads arrived."""

    content: list[str] = field(default_factory=list)
    tools: dict[int, dict[str, str]] = field(default_factory=dict)
    # What the tool-call deltas said beyond the merged calls (integrity classes): the distinct
    # ids each index carried, and how many deltas carried no index (merged into 0).
    tool_ids: dict[int, list[str]] = field(default_factory=dict)
    unindexed_deltas: int = 0
    read_ns: list[int] = field(default_factory=list)
    # characters per stamped read: content, reasoning, tool-call (name + arguments)
    read_chars: tuple[list[int], list[int], list[int]] = field(
        default_factory=lambda: ([], [], []))
    done_ns: int | None = None  # the read that carried `[DONE]`, or when the body ended
    done_seen: bool = False  # the stream carried `[DONE]` (not merely ended)
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    server: dict[str, Any] = field(default_factory=dict)


class StreamParser:
    """Feed network reads in order; `done` turns true at `[DONE]` (later bytes are ignored)."""

    def __init__(self) -> None:
        self.reply = StreamReply()
        self._events = SSEReader()
        self.done = False

    def feed(self, piece: bytes, now_ns: int) -> None:
        """One network read, stamped `now_ns`. Error events and odd chunks raise."""
        if self.done:
            return
        counts = [0, 0, 0]  # content, reasoning, tool-call characters this read carried
        bearing = False
        for event, data in self._events.feed(piece):
            if data.startswith(b"[DONE]"):
                self.done = True
                self.reply.done_ns = now_ns
                self.reply.done_seen = True
                break
            bearing |= _absorb_event(self.reply, event, data, counts)
        if bearing:
            self.reply.read_ns.append(now_ns)
            for sizes, n in zip(self.reply.read_chars, counts, strict=True):
                sizes.append(n)

    def close(self, now_ns: int) -> None:
        """The body ended: an event cut off by the end (no blank line after it) still counts."""
        if self.done:
            return
        self.feed(b"\n\n", now_ns)
        self.reply.done_ns = now_ns


def _absorb_event(reply: StreamReply, event: str | None, data: bytes, counts: list[int]) -> bool:
    """Parse one event's data and fold it in; True when it carried a delta worth stamping."""
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
        return _absorb(reply, chunk, counts)
    except (AttributeError, TypeError, KeyError) as exc:
        raise ValueError(f"unexpected chunk shape: {type(exc).__name__}: {exc}") from None


def _absorb(reply: StreamReply, chunk: dict[str, Any], counts: list[int]) -> bool:
    """Fold one chunk into the reply. Content-bearing: text, reasoning or a tool-call delta
    (the empty role chunk and the closing finish/usage chunks are not)."""
    bearing = False
    for choice in chunk.get("choices") or ():
        delta = choice.get("delta")
        if delta:
            content = delta.get("content")
            if content:
                reply.content.append(content)
                counts[0] += len(content)
                bearing = True
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if reasoning:
                counts[1] += len(reasoning)
                bearing = True
            for tc in delta.get("tool_calls") or ():
                index = tc.get("index")
                if not isinstance(index, int) or isinstance(index, bool) or index < 0:
                    reply.unindexed_deltas += 1
                    index = 0
                slot = reply.tools.setdefault(index, {})
                if tc.get("id"):
                    slot["id"] = tc["id"]
                    ids = reply.tool_ids.setdefault(index, [])
                    if str(tc["id"]) not in ids:
                        ids.append(str(tc["id"]))
                fn = tc.get("function")
                if fn:
                    if fn.get("name"):
                        slot["name"] = slot.get("name", "") + fn["name"]
                        counts[2] += len(fn["name"])
                    if fn.get("arguments"):
                        slot["arguments"] = slot.get("arguments", "") + fn["arguments"]
                        counts[2] += len(fn["arguments"])
                bearing = True
        if choice.get("finish_reason"):
            reply.finish_reason = choice["finish_reason"]
    usage = chunk.get("usage")
    if usage is not None:
        reply.usage = usage
    nvext = chunk.get("nvext")
    if isinstance(nvext, dict):
        reply.server.update(nvext)
    return bearing


def usage_tokens(usage: dict[str, Any] | None) -> tuple[int | None, int | None, int | None]:
    """(prompt, completion, cached) from the server's usage; None where it said nothing."""
    if not isinstance(usage, dict):
        return None, None, None
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens")), \
        _count(cached)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def tool_stream(reply: StreamReply, params: dict[str, Any]) -> ToolStream:
    """The record's `tool_stream`: the tools the request (`params`: its API parameters besides
    the messages) offered, and the tool calls as the stream delivered them."""
    choice = params.get("tool_choice")
    if isinstance(choice, dict):  # {"type": "function", "function": {"name": …}}
        function = choice.get("function")
        choice = function.get("name") if isinstance(function, dict) else None
    calls = [StreamedCall(index=i, ids=reply.tool_ids.get(i, []), name=str(t.get("name", "")),
                          arguments=str(t.get("arguments", ""))[:ARGUMENTS_KEPT],
                          arguments_chars=len(str(t.get("arguments", ""))))
             for i, t in sorted(reply.tools.items())[:CALLS_KEPT]]
    return ToolStream(offered=len(params.get("tools") or ()),
                      choice=choice if isinstance(choice, str) else None, calls=calls,
                      n_calls=len(reply.tools), unindexed_deltas=reply.unindexed_deltas,
                      done=reply.done_seen)
