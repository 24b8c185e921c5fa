"""Acceptance: the real `harbor` CLI runs BankingAgent on sample tasks, concurrently, in
LocalEnvironment, against the real Dynamo frontend + mocker whose replay trace scripts every
model output (see scripts.py). Scores, intents, call records and token counts are checked
against what the scripts imply and what the server itself counted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import httpx
import pytest
from harbor.models.trajectories.trajectory import Trajectory
from harbor.models.trial.result import TrialResult

from analysis.metrics.latency import timing_ms
from contracts.llm_calls import MEASURED_ROLES, SESSION_CLOSE_ROLE, LLMCallRecord
from contracts.request_trace import REQUEST_TRACE_FILE
from tests.agents import scripts
from tests.support.harbor_run import agent_calls, read_jsonl, run_job, token_count, trials

pytestmark = [pytest.mark.dynamo, pytest.mark.harbor]

def _norm(name: str) -> str:
    return name.lower().replace("_", "").replace("-", "")


def set_f1(actual: list[str], expected: list[str]) -> float:
    a, e = {_norm(n) for n in actual}, {_norm(n) for n in expected}
    if not a and not e:
        return 1.0
    if not a or not e:
        return 0.0
    hit = len(a & e)
    if hit == 0:
        return 0.0
    p, r = hit / len(a), hit / len(e)
    return 2 * p * r / (p + r)


def _server_token_sums(base_url: str) -> tuple[float, float]:
    text = httpx.get(base_url.removesuffix("/v1") + "/metrics", timeout=10).text
    def total(metric: str) -> float:
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith(metric + "{") or line.startswith(metric + " "))
    return (total("dynamo_frontend_input_sequence_tokens_sum"),
            total("dynamo_frontend_output_sequence_tokens_sum"))


def expected_tools(tasks: Path, scenario: str) -> list[str]:
    return json.loads((tasks / scenario / "tests/expected.json").read_text())["expected_tools"]


@pytest.fixture(scope="module")
def secret_key() -> str:
    return "sk-e2e-" + os.urandom(12).hex()


@pytest.fixture(scope="module")
def native_job(sample_tasks, scripted_stack, tmp_path_factory, secret_key):
    before = _server_token_sums(scripted_stack.base_url)
    job = run_job(sample_tasks, scripted_stack, tmp_path_factory.mktemp("jobs"), "native",
                  sorted(scripts.NATIVE), scripts.PREFIX_NATIVE, [], secret_key)
    after = _server_token_sums(scripted_stack.base_url)
    return job, (after[0] - before[0], after[1] - before[1])


def test_scores_match_the_scripts(native_job, sample_tasks):
    job, _ = native_job
    found = trials(job)
    assert sorted(found) == sorted(scripts.NATIVE)
    for scenario, trial in found.items():
        result = TrialResult.model_validate_json((trial / "result.json").read_text())
        assert result.exception_info is None, result.exception_info
        reward = json.loads((trial / "verifier/reward.json").read_text())
        implied = set_f1(scripts.scripted_calls(scripts.NATIVE[scenario]),
                         expected_tools(sample_tasks, scenario))
        assert reward["tsq"] == pytest.approx(implied), scenario
        status = json.loads((trial / "agent/agent_status.json").read_text())
        assert status["status"] == "ok" and status["accepted_attempt"] is None


def test_concurrent_trials_never_mix_intents(native_job):
    job, _ = native_job
    for scenario, trial in trials(job).items():
        intents = read_jsonl(trial / "agent/intents.jsonl")
        assert [i["tool"] for i in intents] == scripts.scripted_calls(scripts.NATIVE[scenario])
        assert {i["attempt"] for i in intents} == {1}
    malformed = read_jsonl(trials(job)["banking-001"] / "agent/intents.jsonl")[-1]
    assert malformed["tool"] == "request_replacement_card" and malformed["valid"] is False


def test_every_request_is_recorded_with_the_servers_token_counts(native_job):
    job, (server_prompt, server_completion) = native_job
    all_records: list[LLMCallRecord] = []
    for scenario, trial in trials(job).items():
        every = [LLMCallRecord.model_validate(r)
                 for r in read_jsonl(trial / "agent/llm_calls.jsonl")]
        # the session's closing request comes last, once, and is the server's work too
        assert [r.role for r in every].count(SESSION_CLOSE_ROLE) == 1
        assert every[-1].role == SESSION_CLOSE_ROLE
        records = every[:-1]
        turns = scripts.NATIVE[scenario]
        assert len(records) == len(turns)
        assert [r.completion_tokens for r in records] == [token_count(t) for t in turns]
        assert {r.trial_name for r in records} == {trial.name}
        assert {r.session_id for r in records} == {trial.name}
        assert {r.scenario_id for r in records} == {scenario}
        assert [r.step for r in records] == list(range(1, len(turns) + 1))
        assert all(r.error is None and timing_ms(r)["ttft_ms"] and r.http_status == 200
                   for r in records)
        result = TrialResult.model_validate_json((trial / "result.json").read_text())
        assert result.agent_result.n_input_tokens == sum(r.prompt_tokens for r in records)
        assert result.agent_result.n_output_tokens == sum(r.completion_tokens for r in records)
        Trajectory.model_validate_json((trial / "agent/trajectory.json").read_text())
        all_records += every
    assert sum(r.prompt_tokens for r in all_records) == server_prompt
    assert sum(r.completion_tokens for r in all_records) == server_completion


def test_api_key_never_reaches_the_job_dir(native_job, secret_key):
    job, _ = native_job
    leaks = [p for p in job.rglob("*") if p.is_file() and secret_key.encode() in p.read_bytes()]
    assert leaks == []
    assert "BANKBENCH_E2E_KEY" in (job / "config.json").read_text()  # the name only


def test_each_trial_closes_its_session_once_at_its_end(native_job, scripted_stack):
    """At a trial's end one request of its own carries `x-dynamo-session-final: true`: last in
    its records, after every measured one, and seen by the frontend (its request trace; the
    stack's KV router keeps session affinity) as its session's one final request."""
    job, _ = native_job
    trace_file = scripted_stack.state_dir / REQUEST_TRACE_FILE
    found = trials(job)
    assert sorted(found) == sorted(scripts.NATIVE)
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


def test_self_eval_retries_until_accepted(sample_tasks, scripted_stack, tmp_path, secret_key):
    job = run_job(sample_tasks, scripted_stack, tmp_path, "self-eval", sorted(scripts.SELF_EVAL),
                  scripts.PREFIX_SELF_EVAL, ["self_eval=true", "max_retries=2"], secret_key)
    found = trials(job)
    assert sorted(found) == sorted(scripts.SELF_EVAL)
    for scenario, trial in found.items():
        turns = scripts.SELF_EVAL[scenario]
        intents = read_jsonl(trial / "agent/intents.jsonl")
        calls = [i for i in intents if "tool" in i]
        assert {c["attempt"] for c in calls} == {1, 2}
        assert [i["accept"] for i in intents if "accept" in i] == [2]
        second = [c["tool"] for c in calls if c["attempt"] == 2]
        assert second == scripts.scripted_calls(turns[3:5])
        reward = json.loads((trial / "verifier/reward.json").read_text())
        assert reward["tsq"] == pytest.approx(set_f1(second, expected_tools(sample_tasks,
                                                                            scenario)))
        records = agent_calls(trial)
        assert len(records) == len(turns)
        judge = [r for r in records if r["role"] == "evaluator"]
        assert [(r["attempt"], r["step"]) for r in judge] == [(1, 0), (2, 0)]
        meta = TrialResult.model_validate_json(
            (trial / "result.json").read_text()).agent_result.metadata
        assert meta["accepted_attempt"] == 2 and meta["attempts"] == 2
        assert [v["accepted"] for v in meta["verdicts"]] == [False, True]
        status = json.loads((trial / "agent/agent_status.json").read_text())
        assert status["status"] == "ok" and status["accepted_attempt"] == 2
    first = TrialResult.model_validate_json(
        (found["banking-002"] / "result.json").read_text()).agent_result.metadata["verdicts"][0]
    assert first["parsed"] is False and first["confidence"] == 0.0


def test_text_mode(sample_tasks, scripted_stack, tmp_path, secret_key):
    job = run_job(sample_tasks, scripted_stack, tmp_path, "text", sorted(scripts.TEXT),
                  scripts.PREFIX_TEXT, ["tool_mode=text"], secret_key)
    trial = trials(job)["banking-003"]
    turns = scripts.TEXT["banking-003"]
    intents = read_jsonl(trial / "agent/intents.jsonl")
    assert [i["tool"] for i in intents] == scripts.scripted_calls(turns)
    assert intents[1]["arguments"] == {"from_currency": "USD", "to_currency": "EUR"}
    reward = json.loads((trial / "verifier/reward.json").read_text())
    assert reward["tsq"] == pytest.approx(set_f1(scripts.scripted_calls(turns),
                                                 expected_tools(sample_tasks, "banking-003")))
    assert len(agent_calls(trial)) == len(turns)


@pytest.mark.harbor
def test_unreachable_server_is_an_infra_error_and_still_verified(sample_tasks, tmp_path,
                                                                 secret_key):
    import socket
    from types import SimpleNamespace

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = SimpleNamespace(base_url=f"http://127.0.0.1:{s.getsockname()[1]}/v1",
                               model="m")
    job = run_job(sample_tasks, dead, tmp_path, "dead", ["banking-000"], "n-",
                  ["max_attempts=2", "request_timeout_s=2"], secret_key)
    trial = trials(job)["banking-000"]
    status = json.loads((trial / "agent/agent_status.json").read_text())
    assert status["status"] == "infra_error" and "after 2 tries" in status["reason"]
    result = TrialResult.model_validate_json((trial / "result.json").read_text())
    assert result.exception_info is None  # the trial went on to verification
    assert json.loads((trial / "verifier/reward.json").read_text())["tsq"] == 0.0
    record = read_jsonl(trial / "agent/llm_calls.jsonl")[0]
    assert record["error"]["type"] == "connection" and record["retries"] == 1


async def test_agent_timeout_while_waiting_on_the_server(sample_tasks, scripted_stack, tmp_path,
                                                         secret_key):
    """Harbor cancels the agent mid-request: the request is still recorded, and the trial is
    marked infra_error because the time was spent waiting on the server."""
    import asyncio
    import tomllib
    from types import SimpleNamespace

    from tests.support.fault_proxy import FaultProxy, FaultSchedule

    config = tomllib.loads((sample_tasks / "banking-000/task.toml").read_text())
    multiplier = 3.0 / config["agent"]["timeout_sec"]
    # The stall outlasts the 3 s agent timeout by 3 s (it starts after the agent does); the
    # proxy's exit waits it out, so a longer one is only time spent waiting.
    async with FaultProxy(scripted_stack.base_url, FaultSchedule(["stall"], stall_s=6)) as proxy:
        slow = SimpleNamespace(base_url=proxy.base_url, model=scripted_stack.model)
        job = await asyncio.to_thread(
            run_job, sample_tasks, slow, tmp_path, "timeout", ["banking-000"], "n-",
            ["request_timeout_s=60"], secret_key, [f"--agent-timeout-multiplier={multiplier}"])
    trial = trials(job)["banking-000"]
    result = TrialResult.model_validate_json((trial / "result.json").read_text())
    assert result.exception_info is not None
    assert "Timeout" in result.exception_info.exception_type
    status = json.loads((trial / "agent/agent_status.json").read_text())
    assert status["status"] == "infra_error" and "waiting for the LLM server" in status["reason"]
    (record,) = read_jsonl(trial / "agent/llm_calls.jsonl")
    assert record["error"]["type"] == "cancelled"
    assert timing_ms(LLMCallRecord.model_validate(record))["ttft_ms"] is None


@pytest.mark.harbor
def test_bad_agent_option_stops_the_job_before_any_trial(sample_tasks, tmp_path):
    harbor = Path(sys.executable).parent / "harbor"
    env = {**os.environ, "HARBOR_TELEMETRY": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    proc = subprocess.run(
        [str(harbor), "run", "-p", str(sample_tasks), "-i", "banking-000",
         "--agent", "agents.banking:BankingAgent", "-m", "openai/m",
         "--env", "environments.local:LocalEnvironment", "-o", str(tmp_path / "jobs"),
         "--ak", "tool_mod=text"], env=env, cwd=tmp_path, capture_output=True, text=True,
        timeout=120)
    assert "unknown option --ak tool_mod" in proc.stdout + proc.stderr
    assert not list((tmp_path / "jobs").glob("*/banking-000__*"))
