"""A trial's session ends the way Dynamo's agent integrations end one: at the trial's end, one
request of its own carrying `x-dynamo-session-final: true` (Dynamo 1.6.1 reads the header off
a request into its agent context; the agent cannot know which request is its last before the
reply). Seen by the real frontend: its request trace, with session affinity on a KV router."""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Iterator

import pytest

from agents.llm import SESSION_FINAL_HEADER, CallInfo, ClientSettings, StreamingClient
from contracts.llm_calls import MEASURED_ROLES, SESSION_CLOSE_ROLE, LLMCallRecord
from contracts.request_trace import REQUEST_TRACE_FILE
from tests.agents import scripts
from tests.support.fault_proxy import FaultProxy, FaultSchedule
from tests.support.harbor_run import read_jsonl, run_job, trials

pytestmark = pytest.mark.dynamo


@pytest.mark.parametrize("session_header", [True, False])
async def test_close_is_one_token_with_the_final_header_and_no_script_turn(scripted_stack,
                                                                           session_header):
    settings = ClientSettings(base_url="", model=scripted_stack.model,
                              session_header=session_header,
                              nvext_annotations=["output_replay_id:timing:{request_index}"])
    async with FaultProxy(scripted_stack.base_url, FaultSchedule([])) as proxy:
        client = StreamingClient(settings.model_copy(update={"base_url": proxy.base_url}))
        try:
            record = await client.close_session(CallInfo("t", "timing", 1, 0, SESSION_CLOSE_ROLE,
                                                         "sess-x"))
        finally:
            await client.aclose()
    if not session_header:  # no session was opened: nothing to close, nothing sent
        assert record is None and proxy.requests == []
        return
    ((headers, body),) = proxy.requests
    assert headers["x-dynamo-session-id"] == "sess-x"
    assert headers[SESSION_FINAL_HEADER] == "true"
    sent = json.loads(body)
    assert sent["max_tokens"] == 1
    assert "annotations" not in sent.get("nvext", {})  # the agent's script is not consumed
    assert record is not None and record.role == SESSION_CLOSE_ROLE and record.error is None


@pytest.fixture(scope="module")
def affinity_stack(tmp_path_factory) -> Iterator:
    from bankbench.serve import api, replay

    root = tmp_path_factory.mktemp("affinity-stack")
    trace = replay.write_trace(root / "trace.jsonl", scripts.all_sessions())
    with api.running("cpu-mocker", workers=2, router="kv", state_dir=root / "state",
                     options={"speedup_ratio": 10.0, "replay_trace": str(trace),
                              "request_trace": True,
                              "router_session_affinity_ttl_secs": 600}) as state:
        yield state


@pytest.mark.harbor
def test_each_trial_closes_its_session_once_at_its_end(sample_tasks, affinity_stack,
                                                       tmp_path, secret_key="sk-close"):
    include = sorted(scripts.NATIVE)[:3]
    job = run_job(sample_tasks, affinity_stack, tmp_path, "close", include,
                  scripts.PREFIX_NATIVE, [], secret_key)
    trace_file = affinity_stack.state_dir / REQUEST_TRACE_FILE
    found = trials(job)
    assert sorted(found) == include
    closes: dict[str, LLMCallRecord] = {}
    for trial in found.values():
        records = [LLMCallRecord.model_validate(r)
                   for r in read_jsonl(trial / "agent/llm_calls.jsonl")]
        closing = [r for r in records if r.role == SESSION_CLOSE_ROLE]
        assert len(closing) == 1, trial.name
        assert records[-1] is closing[0]
        assert closing[0].error is None and closing[0].session_id == trial.name
        measured = [r for r in records if r.role in MEASURED_ROLES]
        assert measured and max(r.start_unix_ns for r in measured) < closing[0].start_unix_ns
        closes[trial.name] = closing[0]
    # The frontend's own record: per session, one request marked final, and none after it.
    deadline = time.monotonic() + 30
    while True:
        lines = [json.loads(x)["event"] for x in trace_file.read_text().splitlines()]
        seen = {e["request"].get("x_request_id") for e in lines}
        if all(c.request_id in seen for c in closes.values()) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    by_session: dict[str, list[dict]] = defaultdict(list)
    for event in lines:
        session = (event.get("agent_context") or {}).get("session_id")
        if session in closes:
            by_session[session].append(event)
    assert sorted(by_session) == sorted(closes)
    for session, events in by_session.items():
        finals = [e for e in events if e["agent_context"].get("session_final")]
        assert len(finals) == 1, session
        assert finals[0]["request"]["x_request_id"] == closes[session].request_id
        received = [e["request"]["request_received_ms"] for e in events]
        assert finals[0]["request"]["request_received_ms"] == max(received), session
        assert len(events) == len(read_jsonl(found[session.split("__")[0]]
                                             / "agent/llm_calls.jsonl"))
