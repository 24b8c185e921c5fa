"""The streaming client against the real Dynamo frontend + mocker, and through the
fault-injecting proxy for the failures Dynamo cannot produce on demand."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from agents.llm import CallInfo, ClientSettings, LLMCallFailed, StreamingClient
from agents.records import CallLog
from analysis.metrics.latency import timing_ms
from tests.agents import scripts
from tests.support.fault_proxy import FaultProxy, FaultSchedule

pytestmark = pytest.mark.dynamo

TOOLS = [{"type": "function", "function": {
    "name": "get_account_balance", "description": "Balance of one account.",
    "parameters": {"type": "object", "properties": {
        "account_number": {"type": "string"}, "account_type": {"type": "string"}}}}}]


def _token_count(text: str) -> int:
    from bankbench.serve.smollm2 import model_dir

    tok = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
    return len(tok.encode(text, add_special_tokens=False).ids)


def _client(base_url: str, model: str, log: CallLog | None = None, **kw) -> StreamingClient:
    settings = ClientSettings(base_url=base_url, model=model,
                              nvext_annotations=["output_replay_id:timing:{request_index}"],
                              backoff_initial_s=0.01, backoff_max_s=0.05, **kw)
    return StreamingClient(settings, sink=log.append if log else None)


def _info(turn: int) -> CallInfo:
    return CallInfo("trial-x", "timing", 1, 1, "agent", "sess-x", request_index=turn)


async def test_text_stream_timing_and_usage(scripted_stack, tmp_path: Path):
    log = CallLog(tmp_path)
    client = _client(scripted_stack.base_url, scripted_stack.model, log)
    try:
        reply = await client.chat([{"role": "user", "content": "hi"}], _info(0), max_tokens=200)
    finally:
        await client.aclose()
    text = scripts.CLIENT["timing"][0]
    rec = reply.record
    assert reply.content == text
    assert rec.completion_tokens == _token_count(text)  # the server's usage, not chunk counts
    assert rec.prompt_tokens and rec.prompt_tokens > 0 and rec.cached_tokens is not None
    assert rec.http_status == 200 and rec.retries == 0 and rec.error is None
    shown = timing_ms(rec)  # the analysis's derivation from the recorded raw times
    assert 0 < shown["ttft_ms"] <= shown["e2e_ms"]
    assert len(shown["itl_ms"]) >= 1 and all(gap >= 0 for gap in shown["itl_ms"])
    assert shown["ttft_ms"] + sum(shown["itl_ms"]) <= shown["e2e_ms"] + 1e-6
    # The client's TTFT includes everything the server counts in its own.
    timing = rec.server["timing"]
    assert shown["ttft_ms"] >= timing["ttft_ms"]
    assert "decode_worker_id" in rec.server["worker_id"]
    # Written as the call ended, identical to what came back.
    lines = log.path.read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0]) == json.loads(rec.model_dump_json())


async def test_tool_call_delta_counts_as_first_token(scripted_stack):
    client = _client(scripted_stack.base_url, scripted_stack.model)
    try:
        reply = await client.chat([{"role": "user", "content": "balance?"}], _info(1),
                                  tools=TOOLS, max_tokens=200)
    finally:
        await client.aclose()
    assert [t.name for t in reply.tool_calls] == ["get_account_balance"]
    assert json.loads(reply.tool_calls[0].arguments)["account_type"] == "savings"
    ttft = timing_ms(reply.record)["ttft_ms"]
    assert ttft is not None and ttft > 0


async def _through_proxy(stack, schedule: FaultSchedule, **settings):
    async with FaultProxy(stack.base_url, schedule) as proxy:
        client = _client(proxy.base_url, stack.model, **settings)
        try:
            reply = await client.chat([{"role": "user", "content": "hi"}], _info(0),
                                      max_tokens=200)
            return reply, proxy.seen
        finally:
            await client.aclose()


@pytest.mark.parametrize("faults", [
    ["http_429", "http_500", "pass"],
    ["http_503", "pass"],
    ["drop_before_first_byte", "pass"],
    ["drop_mid_stream", "pass"],
    ["malformed_sse", "pass"],
])
async def test_transient_faults_are_retried_and_counted(scripted_stack, faults):
    reply, seen = await _through_proxy(scripted_stack, FaultSchedule(faults))
    assert seen == faults
    assert reply.content == scripts.CLIENT["timing"][0]  # the successful attempt's stream
    assert reply.record.retries == len(faults) - 1
    assert reply.record.error is None and reply.record.http_status == 200


async def test_stall_past_timeout_is_a_timeout_record(scripted_stack):
    with pytest.raises(LLMCallFailed) as info:
        await _through_proxy(scripted_stack, FaultSchedule(["stall"], stall_s=3.0),
                             request_timeout_s=0.5, max_attempts=1)
    rec = info.value.record
    assert rec.error.type == "timeout" and info.value.retryable
    assert timing_ms(rec)["ttft_ms"] is None and rec.retries == 0


async def test_stall_then_success(scripted_stack):
    reply, seen = await _through_proxy(scripted_stack, FaultSchedule(["stall"], stall_s=3.0),
                                       request_timeout_s=0.5)
    assert seen == ["stall", "pass"] and reply.record.retries == 1


async def test_client_error_is_not_retried(scripted_stack):
    with pytest.raises(LLMCallFailed) as info:
        await _through_proxy(scripted_stack, FaultSchedule(["http_400", "pass"]))
    assert not info.value.retryable
    assert info.value.record.http_status == 400 and info.value.record.retries == 0
    assert info.value.record.error.type == "http_400"


async def test_retries_exhausted(scripted_stack, tmp_path: Path):
    with pytest.raises(LLMCallFailed) as info:
        await _through_proxy(scripted_stack, FaultSchedule(["http_503"] * 5), max_attempts=3)
    assert info.value.retryable and info.value.record.retries == 2
    assert info.value.record.http_status == 503


async def test_an_identical_failure_is_not_retried_to_the_end(scripted_stack):
    with pytest.raises(LLMCallFailed) as info:
        await _through_proxy(scripted_stack, FaultSchedule(["http_500"] * 5), max_attempts=4)
    assert info.value.repeated and info.value.record.retries == 1  # two tries, not four
    assert info.value.request_chars > 0


async def test_overload_replies_are_counted_even_when_a_retry_succeeds(scripted_stack):
    """429 and 529 are the server shedding load: the record counts them (capacity charges
    them to the error rate) although the third try succeeded."""
    reply, seen = await _through_proxy(scripted_stack,
                                       FaultSchedule(["http_429", "http_529", "pass"]))
    assert seen == ["http_429", "http_529", "pass"] and reply.record.error is None
    assert (reply.record.retries, reply.record.overloaded) == (2, 2)


async def test_different_failures_in_a_row_are_still_retried(scripted_stack):
    reply, seen = await _through_proxy(scripted_stack,
                                       FaultSchedule(["http_500", "http_503", "http_500", "pass"]))
    assert reply.record.retries == 3 and seen[-1] == "pass"


async def test_key_echoed_by_a_server_is_scrubbed(scripted_stack, monkeypatch, tmp_path: Path):
    key = "sk-bankbench-test-" + os.urandom(8).hex()
    monkeypatch.setenv("BANKBENCH_TEST_KEY", key)
    log = CallLog(tmp_path)
    schedule = FaultSchedule(["http_400"], echo_auth_in_errors=True)
    async with FaultProxy(scripted_stack.base_url, schedule) as proxy:
        client = _client(proxy.base_url, scripted_stack.model, log,
                         api_key_env="BANKBENCH_TEST_KEY")
        try:
            with pytest.raises(LLMCallFailed) as info:
                await client.chat([{"role": "user", "content": "hi"}], _info(0), max_tokens=5)
        finally:
            await client.aclose()
    assert "Bearer ***" in info.value.record.error.message  # the proxy did echo it
    assert key not in str(info.value) and key not in log.path.read_text()


async def test_seeded_fault_schedule_is_reproducible_and_fully_accounted(scripted_stack):
    faults = ["http_429", "http_500", "drop_before_first_byte", "drop_mid_stream",
              "malformed_sse", "stall"]
    schedule = FaultSchedule.seeded(seed=11, n=40, faults=faults, rate=0.4, stall_s=2.0)
    assert schedule.faults == FaultSchedule.seeded(11, 40, faults, 0.4, 2.0).faults
    assert set(schedule.faults) - {"pass"}  # the seed does inject something
    async with FaultProxy(scripted_stack.base_url, schedule) as proxy:
        client = _client(proxy.base_url, scripted_stack.model, request_timeout_s=0.5,
                         max_attempts=10)
        try:
            records = [(await client.chat([{"role": "user", "content": "hi"}], _info(0),
                                          max_tokens=200)).record for _ in range(8)]
        finally:
            await client.aclose()
    # Every injected fault cost exactly one retry; every request ended with the full text.
    injected = sum(1 for f in proxy.seen if f != "pass")
    assert injected > 0
    assert sum(r.retries for r in records) == injected
    assert len(proxy.seen) == 8 + injected
    assert all(r.error is None and r.http_status == 200 for r in records)


@pytest.mark.parametrize("session_header", [True, False])
async def test_request_carries_ids_and_nvext_fields(scripted_stack, session_header):
    async with FaultProxy(scripted_stack.base_url, FaultSchedule([])) as proxy:
        client = _client(proxy.base_url, scripted_stack.model, session_header=session_header)
        try:
            reply = await client.chat([{"role": "user", "content": "hi"}], _info(0),
                                      max_tokens=200)
        finally:
            await client.aclose()
    ((headers, body),) = proxy.requests
    sent = json.loads(body)
    assert headers["x-request-id"] == reply.record.request_id
    assert headers.get("x-dynamo-session-id") == ("sess-x" if session_header else None)
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    assert sent["nvext"] == {"extra_fields": ["worker_id", "timing"],
                             "annotations": ["output_replay_id:timing:0"]}
