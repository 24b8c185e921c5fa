"""Tool-call integrity on real parts, one class at a time: the real Dynamo frontend with the
mocker engine replays a scripted tool call; the FAULT-INJECTING TEST PROXY
(tests/support/fault_proxy.py) breaks replies in one named class only when more than one
request is in flight; the agent's own streaming client reads them and analysis classifies them.
A request alone must come back clean, requests sent together in the injected class.

Then `bankbench capacity --slo tool_call_error_rate=0.01` on the same stack, kept minimal: the CLI,
the real harbor CLI and LocalEnvironment behind the proxy leaving tool calls as unparsed markup in
every reply in flight together with another request. Two scenarios, two repeats, one look a level,
levels 1 and 2 (level 1 never puts two requests in flight, level 2 does): the bound holds at level 1
with no broken reply and fails at level 2, where the search stops, and the sweep's report carries
the integrity table (the class at c2, not at c1), its figure and the validity block; the search's
own figure (capacity.png) is drawn. Levels are not held to steady state (--steady 0: c2 runs its
four trials, not six): what is asserted is each level's broken replies, not its window. Whether the
report marks a class worse beyond noise at the level it was injected, with more scenarios and
levels, is `benchmarks/tool_call_integrity.py --stack` (minutes a class)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest

from agents.llm import CallInfo, ClientSettings, StreamingClient
from analysis.metrics.integrity import ANY_COLUMN, classify, tool_schemas
from tests.support.fault_proxy import FaultProxy, FaultSchedule
from tests.support.integrity_stack import scripts, search
from tests.support.integrity_sweep import CALL, TOOL
from tests.support.tool_call_faults import FAULTS, classes_shown

pytestmark = pytest.mark.dynamo
SCENARIOS = 2
MESSAGES = [{"role": "user", "content": "What is the balance of account 12345678?"}]


@pytest.fixture(scope="module")
def stack(tmp_path_factory) -> Iterator:
    from bankbench.serve import api, replay

    root = tmp_path_factory.mktemp("integrity-stack")
    trace = replay.write_trace(root / "trace.jsonl",
                               {"balance": [replay.tool_call_text(*CALL)],
                                **scripts(SCENARIOS)})
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


def _row(section: str, name: str) -> dict[str, str]:
    header = next(line for line in section.splitlines() if line.startswith("| class"))
    levels = [cell.strip() for cell in header.strip("|").split("|")][1:]
    row = next(line for line in section.splitlines() if line.startswith(f"| {name}"))
    return dict(zip(levels, (c.strip() for c in row.strip("|").split("|")[1:]), strict=True))


@pytest.mark.harbor
def test_capacity_stops_at_the_level_where_tool_calls_break(stack, tmp_path):
    # One look a level: two scenarios leave level 1's decision check inconclusive however many
    # repeats it gets, and the integrity bound under test is decided at the first look.
    run = search(stack.base_url, stack.model, tmp_path, "markup_in_content", above=1,
                 scenarios=SCENARIOS, max_level=2, max_looks=1, steady=0, timeout=900)
    done = run.done
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert run.corrupted > 0
    record = json.loads((run.sweep / "capacity.json").read_text())
    steps = {s["level"]: s for s in record["steps"]}
    # the bound holds at level 1 and fails at level 2 (two scenarios cannot certify the
    # decision check, so level 1's own verdict stays inconclusive: not asserted here)
    check = {c["name"]: c for c in steps[1]["checks"]}["tool_call_error_rate"]
    assert check["passed"] and check["value"] == 0, steps[1]
    check = {c["name"]: c for c in steps[2]["checks"]}["tool_call_error_rate"]
    assert not check["passed"] and check["value"] > 0.01, steps[2]
    assert not steps[2]["passed"] and record["lowest_failing"] == 2

    report = (run.sweep / "report.md").read_text()
    section = report.split("## Tool-call integrity vs concurrency")[1].split("\n## ")[0]
    markup = _row(section, "markup")
    assert markup["c1"].startswith("0.0 %") and not markup["c2"].startswith("0.0 %"), section
    assert (run.sweep / "plots" / "integrity_vs_concurrency.png").is_file()
    assert (run.sweep / "capacity.png").is_file()
    validity = report.split("## Validity of the run")[1].split("\n## ")[0]
    # a server the sweep did not start: nothing recorded its version, and the block says so
    assert "the server's version was not recorded" in validity, validity
