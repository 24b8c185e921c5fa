"""Tool-call integrity on real parts, one class at a time: the real Dynamo frontend with the
mocker engine replays a scripted tool call; the FAULT-INJECTING TEST PROXY
(tests/support/fault_proxy.py) breaks replies in one named class only when more than one
request is in flight; the agent's own streaming client reads them and analysis classifies them.
A request alone must come back clean, requests sent together in the injected class."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from agents.llm import CallInfo, ClientSettings, StreamingClient
from analysis.metrics.integrity import ANY_COLUMN, classify, tool_schemas
from tests.support.fault_proxy import FaultProxy, FaultSchedule
from tests.support.integrity_sweep import CALL, TOOL
from tests.support.tool_call_faults import FAULTS, classes_shown

pytestmark = pytest.mark.dynamo
MESSAGES = [{"role": "user", "content": "What is the balance of account 12345678?"}]


@pytest.fixture(scope="module")
def stack(tmp_path_factory) -> Iterator:
    from bankbench.serve import api, replay

    root = tmp_path_factory.mktemp("integrity-stack")
    trace = replay.write_trace(root / "trace.jsonl",
                               {"balance": [replay.tool_call_text(*CALL)]})
    with api.running("cpu-mocker", workers=2, state_dir=root / "state",
                     options={"speedup_ratio": 1.0, "replay_trace": str(trace)}) as state:
        yield state


async def _classes(client: StreamingClient, n: int) -> list[set[str]]:
    """Send n requests together; the classes of each reply."""
    info = CallInfo("t", "banking-000", 1, 1, "agent", None)
    results = await asyncio.gather(*(
        client.chat(MESSAGES, info, tools=[TOOL], tool_choice="auto", max_tokens=200)
        for _ in range(n)))
    out = []
    for result in results:
        record = result.record
        assert record.tool_stream is not None and record.tool_stream.offered == 1
        flags = classify(record.tool_stream, record.finish_reason, result.content,
                         tool_schemas([TOOL]))
        out.append({k.removeprefix("tc_") for k, v in flags.items()
                    if v == 1.0 and k != ANY_COLUMN})
    return out


@pytest.mark.parametrize("fault", FAULTS)
async def test_a_class_injected_above_one_request_in_flight_is_found_only_there(stack, fault):
    schedule = FaultSchedule(integrity=fault, integrity_above=1)
    async with FaultProxy(stack.base_url, schedule) as proxy:
        client = StreamingClient(ClientSettings(
            base_url=proxy.base_url, model=stack.model,
            nvext_annotations=["output_replay_id:balance:0"]))
        try:
            alone = await _classes(client, 1)
            together = await _classes(client, 3)
        finally:
            await client.aclose()
    assert alone == [set()]
    assert proxy.corrupted == 3
    # the mocker ends every scripted reply with finish_reason "length"
    assert together == [classes_shown(fault, "length")] * 3
