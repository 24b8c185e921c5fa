"""The client's own stream reader, on bytes alone: event splitting, what a chunk contributes
to the reply, which reads are stamped (with the time the caller gave), and how odd streams
fail. No server, no clock."""

from __future__ import annotations

import json

import pytest

from agents.sse import (
    SSEReader,
    StreamErrorEvent,
    StreamParser,
    StreamReply,
    tool_stream,
    usage_tokens,
)
from contracts.llm_calls import ARGUMENTS_KEPT, CALLS_KEPT


def _events(pieces: list[bytes]) -> list[tuple[str | None, bytes]]:
    reader = SSEReader()
    return [event for piece in pieces for event in reader.feed(piece)]


def test_events_split_across_reads_and_line_endings():
    pieces = [b'data: {"a":1}\n\ndata: {"b"', b":2}\r", b"\n\r\n: keep-alive\n\n",
              b"event: error\ndata: one\ndata: two\n\n", b"id: 7\ndata: [DONE]\n\n"]
    assert _events(pieces) == [(None, b'{"a":1}'), (None, b'{"b":2}'),
                               ("error", b"one\ntwo"), (None, b"[DONE]")]


def _sse(*chunks: object, done: bool = True) -> bytes:
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    return body + (b"data: [DONE]\n\n" if done else b"")


def _read(body: bytes, pieces: int = 3, start_ns: int = 100, step_ns: int = 10) -> StreamReply:
    """Feed `body` in `pieces` reads stamped start_ns, start_ns + step_ns, …; then its end."""
    step = max(1, len(body) // pieces)
    parser = StreamParser()
    now = start_ns
    for i in range(0, len(body), step):
        parser.feed(body[i:i + step], now)
        now += step_ns
    parser.close(now)
    return parser.reply


def _delta(**delta: object) -> dict:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]}


def test_chunks_fold_into_text_tools_usage_and_server_timing():
    tool = {"index": 0, "id": "call_1", "function": {"name": "get_", "arguments": '{"a"'}}
    more = {"index": 0, "function": {"name": "balance", "arguments": ": 1}"}}
    usage = {"prompt_tokens": 12, "completion_tokens": 4,
             "prompt_tokens_details": {"cached_tokens": 8}}
    chunks = [_delta(role="assistant"), _delta(content="Hel"), _delta(content="lo"),
              _delta(tool_calls=[tool]), _delta(tool_calls=[more]),
              {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
               "nvext": {"timing": {"ttft_ms": 3.0}, "worker_id": {"decode_worker_id": 1}}},
              {"choices": [], "usage": usage}]
    parser = StreamParser()
    for now, chunk in enumerate(chunks, start=100):  # one chunk per read, stamped 100, 101 …
        parser.feed(_sse(chunk, done=False), now)
    parser.feed(b"data: [DONE]\n\n", 200)
    reply = parser.reply
    assert "".join(reply.content) == "Hello"
    assert reply.tools == {0: {"id": "call_1", "name": "get_balance", "arguments": '{"a": 1}'}}
    # The role-only and the closing chunks carry nothing: four reads, with their sizes.
    assert reply.read_ns == [101, 102, 103, 104]
    assert reply.read_chars == ([3, 2, 0, 0], [0, 0, 0, 0], [0, 0, 8, 11])
    assert reply.done_ns == 200
    assert reply.finish_reason == "tool_calls" and reply.usage == usage
    assert usage_tokens(reply.usage) == (12, 4, 8)
    assert reply.server == {"timing": {"ttft_ms": 3.0}, "worker_id": {"decode_worker_id": 1}}


def test_one_stamp_per_read_covers_all_its_events_and_reasoning_counts():
    body = _sse(_delta(reasoning_content="think"), _delta(content="a"), _delta(content="bc"),
                {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    reply = _read(body, pieces=1, start_ns=110)
    assert reply.read_ns == [110]  # one network read: one stamp, sizes summed
    assert reply.read_chars == ([3], [5], [0])
    assert reply.done_ns == 110  # [DONE] came in the same read


def test_bytes_after_done_are_ignored():
    parser = StreamParser()
    parser.feed(_sse(_delta(content="x"), {"choices": [], "usage": {}}), 100)
    parser.feed(_sse(_delta(content="late"), done=False), 130)
    parser.close(140)
    assert parser.reply.content == ["x"] and parser.reply.read_ns == [100]
    assert parser.reply.done_ns == 100


def test_last_event_without_blank_line_still_counts():
    body = _sse(_delta(content="x"), done=False) + b'data: {"choices": [], "usage": {}}'
    reply = _read(body, pieces=1, start_ns=100, step_ns=30)
    assert reply.content == ["x"] and reply.usage == {}
    assert reply.done_ns == 130  # no [DONE]: the stream ended when the body did


def test_usage_without_counts_is_unknown_not_zero():
    assert usage_tokens(None) == (None, None, None)
    assert usage_tokens({"prompt_tokens": 5}) == (5, None, None)


@pytest.mark.parametrize("body", [
    b'data: {"error": {"message": "engine died", "code": 503}}\n\n',
    b'event: error\ndata: "engine died"\n\n',
])
def test_error_inside_a_200_stream(body):
    with pytest.raises(StreamErrorEvent, match="engine died"):
        _read(_sse(_delta(content="x"), done=False) + body)


@pytest.mark.parametrize("body", [
    b'data: {"choices": [ this is not json\n\n',
    b'data: {"choices": [{"delta": "text"}]}\n\n',
])
def test_malformed_stream_is_a_value_error(body):
    with pytest.raises(ValueError):
        _read(body)


def _call_delta(index: object, call_id: str | None, name: str = "", args: str = "") -> dict:
    delta: dict = {"function": {"name": name, "arguments": args}}
    if index is not None:
        delta["index"] = index
    if call_id is not None:
        delta["id"] = call_id
    return {"choices": [{"index": 0, "delta": {"tool_calls": [delta]}}]}


def test_tool_stream_records_ids_indices_and_the_terminator():
    finish = {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}
    body = _sse(_call_delta(0, "a", "get_balance", '{"x"'), _call_delta(0, None, "", ": 1}"),
                _call_delta(1, "b", "f"), _call_delta(1, "c"), _call_delta(None, None, "", "!"),
                finish)
    stream = tool_stream(_read(body), {"tools": [{}, {}], "tool_choice": {
        "type": "function", "function": {"name": "get_balance"}}})
    assert stream.offered == 2 and stream.choice == "get_balance" and stream.done
    assert [(c.index, c.ids, c.name, c.arguments) for c in stream.calls] == [
        (0, ["a"], "get_balance", '{"x": 1}!'), (1, ["b", "c"], "f", "")]
    assert stream.unindexed_deltas == 1 and stream.n_calls == 2
    # the same stream without its terminator; a request without tools
    assert not tool_stream(_read(body[:-len(b"data: [DONE]\n\n")]), {}).done
    assert tool_stream(_read(body), {}).offered == 0


def test_tool_stream_keeps_bounded_copies():
    calls = [_call_delta(i, f"id{i}", "f", "x" * (ARGUMENTS_KEPT + 10)) for i in
             range(CALLS_KEPT + 3)]
    stream = tool_stream(_read(_sse(*calls), pieces=1), {"tools": [{}]})
    assert len(stream.calls) == CALLS_KEPT and stream.n_calls == CALLS_KEPT + 3
    assert len(stream.calls[0].arguments) == ARGUMENTS_KEPT
    assert stream.calls[0].arguments_chars == ARGUMENTS_KEPT + 10
