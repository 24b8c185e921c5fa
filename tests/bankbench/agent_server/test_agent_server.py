"""`bankbench agent-server` over real HTTP (httpx) in front of the real Dynamo frontend + mocker:
both NeMo Evaluator formats, the records each request leaves, bad input, a client that leaves
mid-stream, and parallel requests at and beyond the limit."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import httpx
import pytest

from contracts.llm_calls import MEASURED_ROLES
from tests.support.agent_server_stack import LONG_TURNS, MAX_CONCURRENCY, SECRET, Served

pytestmark = [pytest.mark.dynamo, pytest.mark.slow, pytest.mark.timeout(600)]

TIMEOUT = httpx.Timeout(120.0)


def intents(served: Served, records: str) -> list[dict]:
    path = served.out / records / "intents.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def sse_events(text: str) -> list[tuple[str, dict]]:
    events = []
    for line in text.splitlines():
        kind, sep, body = line.partition(": ")
        if sep and kind in {"data", "intermediate_data"}:
            events.append((kind, json.loads(body)))
    return events


def wait_idle(served: Served, seconds: float = 30) -> dict:
    deadline = time.monotonic() + seconds
    while True:
        health = httpx.get(f"{served.url}/health", timeout=5).json()
        if health["active"] == 0 and health["running"] == 0:
            assert health["episodes_finished"] == health["episodes_started"]
            return health
        assert time.monotonic() < deadline, f"server still busy: {health}"
        time.sleep(0.2)


def test_generic_invoke_answers_with_the_trajectory_the_bank_recorded(served: Served):
    sid = served.scenarios[0]
    r = httpx.post(f"{served.url}/invoke", json={"scenario": sid}, timeout=TIMEOUT)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["status"] == "ok" and body["scenario"] == sid
    assert body["answer"] == served.answers[sid]
    made = [(s["tool"], s["arguments"]) for s in body["trajectory"]]
    assert made == served.calls[sid]
    assert all(s["ok"] and s["observation"] for s in body["trajectory"])
    # The bank's own record agrees with what the response says was called.
    recorded = intents(served, body["records"])
    assert [(i["tool"], i["arguments"]) for i in recorded] == served.calls[sid]
    folder = served.out / body["records"]
    calls = [json.loads(line) for line in (folder / "llm_calls.jsonl").read_text().splitlines()]
    # The agent's reply and its self-evaluation are measured; the session's close is a call of
    # its own, recorded under its role and never measured.
    measured = [c for c in calls if c["role"] in MEASURED_ROLES]
    assert len(measured) == body["llm_calls"] == 2
    assert [c["role"] for c in calls if c not in measured] == ["session_close"]
    assert {c["trial_name"] for c in calls} == {body["request_id"]}
    assert json.loads((folder / "agent_status.json").read_text())["status"] == "ok"
    assert (folder / "trajectory.json").is_file()


def test_free_form_message_runs_against_the_banking_tools(served: Served):
    r = httpx.post(f"{served.url}/invoke", json={"message": "Hi, please sort out my account."},
                   timeout=TIMEOUT)
    assert r.status_code == 200, r.text
    body = r.json()
    first = served.scenarios[0]  # a message alone is run against the first task's bank
    assert body["scenario"] == first and body["answer"] == served.answers[first]
    calls = [json.loads(line) for line in
             (served.out / body["records"] / "llm_calls.jsonl").read_text().splitlines()]
    assert calls  # the message, not the task's instruction, went to the model: see trajectory
    trajectory = json.loads((served.out / body["records"] / "trajectory.json").read_text())
    assert "please sort out my account" in json.dumps(trajectory)


def test_nat_stream_sends_tool_steps_then_the_final_value(served: Served):
    sid = served.scenarios[1]
    with httpx.stream("POST", f"{served.url}/generate/full", json={"input_message": sid},
                      timeout=TIMEOUT) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        rid = r.headers["x-request-id"]
        text = r.read().decode()
    events = sse_events(text)
    assert events[-1] == ("data", {"value": served.answers[sid]})
    steps = [body for kind, body in events if kind == "intermediate_data"]
    assert [s["type"] for s in steps] == ["TOOL_START", "TOOL_END"] * len(served.calls[sid])
    ends = [json.loads(s["payload"]) for s in steps if s["type"] == "TOOL_END"]
    assert [(e["name"], e["data"]["input"]) for e in ends] == served.calls[sid]
    assert all(e["event_type"] == "TOOL_END" and e["data"]["output"] for e in ends)
    recorded = intents(served, f"{rid}/agent")
    assert [(i["tool"], i["arguments"]) for i in recorded] == served.calls[sid]


def test_nat_filter_steps_none_sends_only_the_final_value(served: Served):
    sid = served.scenarios[0]
    r = httpx.post(f"{served.url}/generate/full?filter_steps=none",
                   json={"input_message": sid}, timeout=TIMEOUT)
    assert r.status_code == 200
    assert sse_events(r.text) == [("data", {"value": served.answers[sid]})]


@pytest.mark.parametrize(("path", "content", "status", "error"), [
    ("/invoke", b'{"scenario": ', 400, "malformed_json"),
    ("/invoke", b"{}", 422, "invalid_request"),
    ("/invoke", b'{"scenario": "banking-000", "extra": 1}', 422, "invalid_request"),
    ("/invoke", b'{"scenario": "../../etc"}', 404, "unknown_scenario"),
    ("/generate/full", b"not json", 400, "malformed_json"),
    ("/generate/full", b'{"message": "hi"}', 422, "invalid_request"),
    ("/generate/full", b'{"input_message": "hi", "scenario": "nope"}', 404, "unknown_scenario"),
])
def test_bad_requests_get_a_clear_4xx(served: Served, path, content, status, error):
    r = httpx.post(served.url + path, content=content,
                   headers={"content-type": "application/json"}, timeout=TIMEOUT)
    assert r.status_code == status
    assert r.json()["error"] == error and r.json()["detail"]
    assert "\n" not in r.json()["detail"]


def test_a_client_leaving_mid_stream_cancels_its_episode_and_leaks_nothing(served: Served):
    slow = served.scenarios[2]
    with httpx.stream("POST", f"{served.url}/generate/full", json={"input_message": slow},
                      timeout=TIMEOUT) as r:
        assert r.status_code == 200
        rid = r.headers["x-request-id"]
        for line in r.iter_lines():
            if line.startswith("intermediate_data:"):
                break  # one tool step seen: leave
    wait_idle(served)
    status = json.loads((served.out / rid / "agent" / "agent_status.json").read_text())
    # Cancelled before its last turn, and the status says why; the records stand.
    assert status["status"] in {"agent_error", "infra_error"}, status
    assert status["reason"].startswith("request cancelled: the client disconnected while ")
    calls = (served.out / rid / "agent" / "llm_calls.jsonl").read_text().splitlines()
    assert 1 <= len(calls) < LONG_TURNS + 1
    assert list(served.tmp.iterdir()) == []  # the private bank copy is gone
    # The server still serves.
    again = httpx.post(f"{served.url}/invoke", json={"scenario": served.scenarios[0]},
                       timeout=TIMEOUT)
    assert again.status_code == 200 and again.json()["status"] == "ok"


async def test_parallel_requests_within_the_limit_run_and_beyond_it_get_429(served: Served):
    slow = served.scenarios[2]
    async with httpx.AsyncClient(base_url=served.url, timeout=TIMEOUT) as client:
        async def invoke():
            return await client.post("/invoke", json={"scenario": slow})

        within = await asyncio.gather(*(invoke() for _ in range(MAX_CONCURRENCY)))
        assert [r.status_code for r in within] == [200] * MAX_CONCURRENCY
        assert all(r.json()["answer"] == served.answers[slow] for r in within)
        assert len({r.json()["request_id"] for r in within}) == MAX_CONCURRENCY

        beyond = await asyncio.gather(*(invoke() for _ in range(MAX_CONCURRENCY + 1)))
    codes = sorted(r.status_code for r in beyond)
    assert codes == [200] * MAX_CONCURRENCY + [429]
    busy = next(r for r in beyond if r.status_code == 429)
    assert busy.headers["retry-after"] and busy.json()["error"] == "busy"
    wait_idle(served)


def test_no_response_or_record_holds_the_api_key(served: Served):
    # Runs last in this file: every earlier request's records are on disk by now.
    r = httpx.post(f"{served.url}/invoke", json={"scenario": served.scenarios[0]},
                   timeout=TIMEOUT)
    assert SECRET not in r.text
    files = [p for p in Path(served.out).rglob("*") if p.is_file()]
    assert files
    assert [p for p in files if SECRET in p.read_text(errors="replace")] == []
    assert SECRET not in served.log.read_text()
