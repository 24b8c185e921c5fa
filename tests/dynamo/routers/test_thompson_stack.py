"""The thompson router on the real Dynamo frontend + mocker workers (one made slow)."""

import uuid

import pytest

from analysis.router_decisions import join_llm_calls
from bankbench.serve import api
from tests.dynamo.routers.helpers import (
    chat,
    component_of,
    wait_for_decisions,
    wait_joined,
    worker_ports,
)

pytestmark = pytest.mark.dynamo

SLOW = "worker-2"


@pytest.fixture(scope="module")
def stack(tmp_path_factory, dynamo_python):
    tmp = tmp_path_factory.mktemp("thompson")
    # worker-2 runs at 1/8 of the others' speed: same engine, slower simulated clock.
    state = api.up("cpu-mocker", router="thompson", workers=3, state_dir=tmp / "state",
                   options={"speedup_ratio": 4, "worker_speedup_ratios": "4 4 0.5",
                            "router_seed": 7})
    yield state
    api.down(state)


def test_the_frontend_reaches_workers_only_through_the_router(stack):
    names = [c.name for c in api.load_state(stack.state_dir).components]
    assert names == ["frontend", "worker-0", "worker-1", "worker-2", "router"]
    assert api.status(stack).workers_registered == 3  # the router is not counted as one
    before = len(wait_for_decisions(stack, 0))
    sent = [f"route-{i}-{uuid.uuid4().hex[:6]}" for i in range(12)]
    for i, rid in enumerate(sent):
        r = chat(stack, rid, f"sess-{i % 4}", f"question {i} about my savings account")
        assert r.status_code == 200, r.text
    rows = wait_for_decisions(stack, before + len(sent))[before:]
    assert len(rows) == len(sent) and all(r["outcome"] == "ok" for r in rows)
    joined = wait_joined(stack, sent)
    assert set(sent) <= set(joined["request_id"].dropna())
    ports = worker_ports(stack)
    assert {component_of(a, ports) for a in joined["worker_address"]} <= {
        "worker-0", "worker-1", "worker-2"}


def test_reader_joins_decisions_to_llm_call_rows(stack):
    import pandas as pd

    rid = f"join-{uuid.uuid4().hex[:6]}"
    assert chat(stack, rid, "sess-join", "hello").status_code == 200
    wait_joined(stack, [rid])
    calls = pd.DataFrame({"request_id": [rid, "never-sent"], "ttft_ms": [1.0, 2.0]})
    out = join_llm_calls(calls, stack.state_dir)
    assert len(out) == 2
    hit = out.set_index("request_id")
    assert pd.notna(hit.loc[rid, "worker"]) and hit.loc[rid, "reason"]
    assert pd.isna(hit.loc["never-sent", "worker"])


def test_posterior_moves_away_from_the_slow_worker(stack):
    ports = worker_ports(stack)
    before = len(wait_for_decisions(stack, 0))
    n = 60
    for i in range(n):  # a new session each time: no affinity, only what was learned
        r = chat(stack, f"learn-{i}", f"learn-{uuid.uuid4().hex[:8]}", f"turn {i} of the study")
        assert r.status_code == 200, r.text
    rows = wait_for_decisions(stack, before + n)[before:]
    served = [component_of(r["worker_address"], ports) for r in rows]
    late = served[n // 2:]
    assert late.count(SLOW) / len(late) < 0.15, served
    last = rows[-1]["candidates"]
    everything = wait_for_decisions(stack, 0)  # earlier tests' rows name worker-2 too
    by_name = {component_of_id(everything, c["worker"], ports): c for c in last}
    assert by_name[SLOW]["mean_ttft_ms"] > 2 * max(
        by_name[w]["mean_ttft_ms"] for w in ("worker-0", "worker-1"))


def component_of_id(rows, worker_id, ports):
    for r in rows:
        if r["chosen"] == worker_id:
            return component_of(r["worker_address"], ports)
    return None


async def test_agent_hints_from_the_agent_client_reach_the_router(stack):
    from agents.llm import CallInfo, ClientSettings, StreamingClient

    client = StreamingClient(ClientSettings(base_url=stack.base_url, model=stack.model,
                                            hint_osl=77, hint_priority=2))
    try:
        reply = await client.chat([{"role": "user", "content": "hints"}],
                                  CallInfo("trial-h", "hints", 1, 1, "agent", "sess-hints"),
                                  max_tokens=4)
    finally:
        await client.aclose()
    rid = reply.record.request_id
    row = wait_joined(stack, [rid]).set_index("request_id").loc[rid]
    assert row["osl"] == 77 and row["session_id"] == "sess-hints"
    raw = [r for r in wait_for_decisions(stack, 0)
           if r["request_id"] == row["frontend_request_id"]]
    assert raw[0]["priority"] == 2
