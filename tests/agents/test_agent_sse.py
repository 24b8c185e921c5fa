"""The client's own SSE reading, without a server: event splitting, what a chunk contributes
to the record, and how odd streams fail."""

from __future__ import annotations

import json

import httpx2
import pytest

from agents.llm import StreamErrorEvent, _read_stream, _SSEReader, _StreamState


def _events(pieces: list[bytes]) -> list[tuple[str | None, bytes]]:
    reader = _SSEReader()
    return [event for piece in pieces for event in reader.feed(piece)]


def test_events_split_across_reads_and_line_endings():
    pieces = [b'data: {"a":1}\n\ndata: {"b"', b":2}\r", b"\n\r\n: keep-alive\n\n",
              b"event: error\ndata: one\ndata: two\n\n", b"id: 7\ndata: [DONE]\n\n"]
    assert _events(pieces) == [(None, b'{"a":1}'), (None, b'{"b":2}'),
                               ("error", b"one\ntwo"), (None, b"[DONE]")]


def _sse(*chunks: object, done: bool = True) -> bytes:
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    return body + (b"data: [DONE]\n\n" if done else b"")


async def _read(body: bytes, pieces: int = 3) -> _StreamState:
    step = max(1, len(body) // pieces)

    async def stream():
        for i in range(0, len(body), step):
            yield body[i:i + step]

    response = httpx2.Response(200, content=stream())
    state = _StreamState(t0=0, start_unix_ns=0)
    await _read_stream(response, state)
    return state


def _delta(**delta: object) -> dict:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]}


async def test_chunks_fold_into_text_tools_usage_and_server_timing():
    tool = {"index": 0, "id": "call_1", "function": {"name": "get_", "arguments": '{"a"'}}
    more = {"index": 0, "function": {"name": "balance", "arguments": ": 1}"}}
    usage = {"prompt_tokens": 12, "completion_tokens": 4,
             "prompt_tokens_details": {"cached_tokens": 8}}
    body = _sse(_delta(role="assistant"), _delta(content="Hel"), _delta(content="lo"),
                _delta(tool_calls=[tool]), _delta(tool_calls=[more]),
                {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
                 "nvext": {"timing": {"ttft_ms": 3.0}, "worker_id": {"decode_worker_id": 1}}},
                {"choices": [], "usage": usage})
    state = await _read(body)
    assert "".join(state.content) == "Hello"
    assert state.tools == {0: {"id": "call_1", "name": "get_balance", "arguments": '{"a": 1}'}}
    assert len(state.token_times) == 4  # the role-only and the closing chunks carry nothing
    assert state.finish_reason == "tool_calls" and state.usage == usage
    assert state.server == {"timing": {"ttft_ms": 3.0}, "worker_id": {"decode_worker_id": 1}}


async def test_last_event_without_blank_line_still_counts():
    body = _sse(_delta(content="x"), done=False) + b'data: {"choices": [], "usage": {}}'
    state = await _read(body)
    assert state.content == ["x"] and state.usage == {}


@pytest.mark.parametrize("body", [
    b'data: {"error": {"message": "engine died", "code": 503}}\n\n',
    b'event: error\ndata: "engine died"\n\n',
])
async def test_error_inside_a_200_stream(body):
    with pytest.raises(StreamErrorEvent, match="engine died"):
        await _read(_sse(_delta(content="x"), done=False) + body)


@pytest.mark.parametrize("body", [
    b'data: {"choices": [ this is not json\n\n',
    b'data: {"choices": [{"delta": "text"}]}\n\n',
])
async def test_malformed_stream_is_a_value_error(body):
    with pytest.raises(ValueError):
        await _read(body)
