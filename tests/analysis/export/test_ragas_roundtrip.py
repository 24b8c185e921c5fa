"""The export read back by ragas itself: ToolCallAccuracy on hand-made trials equals what
bankbench's mapping predicts, a job written by the real `harbor run` scores as it should, and so
does a job the real BankingAgent ran (real `harbor run`, LocalEnvironment, the real Dynamo
frontend + mocker scripted by a replay trace, self-evaluation on).

The agent's scripts are made from each task's own expected tools, so the score ragas must give
follows from them: scenario A gets it wrong on attempt 1, is sent back by its evaluator and calls
every expected tool in goal order on attempt 2 (ToolCallAccuracy 1, from attempt 2 only);
scenario B calls them in reverse order with the first call's arguments rejected by the bank
(strict order 0; unordered (n-1)/n, its param_validity).

ragas runs in its own venv (tests/analysis/export/ragas_venv.py says why); the first run creates it.
One ragas process reads every export back (its import is most of a read-back's time), and one
Harbor job runs both of Harbor's agents.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from harbor.models.trial.result import TrialResult

from analysis.export.writer import FAMILIES, INDEX_FILE, export_nemo
from bankbench.serve.replay import oracle_calls as task_calls
from bankbench.serve.replay import tool_call_text as tc
from bankbench.sweep.harbor_job import SKIP_PROVIDER_MAPPING
from tests.analysis.export.ragas_venv import ragas_read_back
from tests.support.built_tasks import build_sample
from tests.support.export_cases import CASES, case_job
from tests.support.sample_job import run_sample_job

# Every test reads the one ragas read-back, which needs both Harbor jobs and the Dynamo stack.
pytestmark = [pytest.mark.dynamo, pytest.mark.harbor, pytest.mark.slow,
              pytest.mark.timeout(900)]

SCENARIOS = ("banking-000", "banking-001", "banking-002")
AGENTS = ("oracle", "nop")
A, B = "banking-000", "banking-001"  # the BankingAgent job's two scenarios
PREFIX = "x-"
ANSWER_A = "Everything you asked for is done."


def verdict(ok: bool) -> str:
    return json.dumps({"is_sufficient": ok, "confidence": 0.9, "reasoning": "scripted",
                       "missing_steps": [] if ok else ["the rest"]})


def _index(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / INDEX_FILE).read_text().splitlines()]


def _by_trial(out: Path, scores: list[float]) -> dict[str, float]:
    index = _index(out)
    assert len(index) == len(scores)
    return {row["trial"]: score for row, score in zip(index, scores, strict=True)}


@pytest.fixture(scope="module")
def harbor_job(tmp_path_factory) -> Path:
    """Harbor's oracle (one schema-valid call per expected tool, in goal order) and its nop
    agent (no call at all) on three sample tasks, in one job."""
    return run_sample_job(tmp_path_factory.mktemp("harbor"), "agents", SCENARIOS,
                          agents=[{"name": agent} for agent in AGENTS], n_concurrent=3,
                          timeout=500)


@pytest.fixture(scope="module")
def agent_job(tmp_path_factory) -> tuple[Path, dict[str, list[tuple[str, dict]]]]:
    """BankingAgent with self-evaluation on scenarios A and B, its model outputs scripted."""
    from bankbench.serve import api, replay

    root = tmp_path_factory.mktemp("agent-export")
    tasks = root / "tasks"
    build_sample(tasks, limit=2)
    calls = {sid: task_calls(tasks / sid) for sid in (A, B)}
    a, b = calls[A], calls[B]
    assert len(b) >= 2 and all(required for _, required in b[-1:]), "B needs a required arg"
    first_b = (b[-1][0], {})  # reversed order; its first call lacks the required arguments
    sessions = {
        PREFIX + A: [tc(*a[0]), "Checked the first thing.", verdict(False),
                     "\n".join(tc(*c) for c in a), ANSWER_A, verdict(True)],
        PREFIX + B: ["\n".join(tc(*c) for c in [first_b, *reversed(b[:-1])]),
                     "Done, in my own order.", verdict(True)],
    }
    trace = replay.write_trace(root / "trace.jsonl", sessions)
    env = {**os.environ, "HARBOR_TELEMETRY": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    with api.running("cpu-mocker", workers=1, state_dir=root / "state",
                     options={"speedup_ratio": 10.0, "replay_trace": str(trace)}) as stack:
        cmd = [str(Path(sys.executable).parent / "harbor"), "run", "-p", str(tasks), "-n", "2",
               "--agent", "agents.banking:BankingAgent", "-m", f"openai/{stack.model}",
               "--env", "environments.local:LocalEnvironment", "-o", str(root / "jobs"),
               "--job-name", "agent", SKIP_PROVIDER_MAPPING,  # as a sweep runs it
               "--ak", f"base_url={stack.base_url}",
               "--ak", "self_eval=true", "--ak", "max_retries=2",
               "--ak", f"nvext_annotations=output_replay_id:{PREFIX}{{scenario_id}}:"
                       "{request_index}"]
        done = subprocess.run(cmd, env=env, cwd=root, capture_output=True, text=True,
                              timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return root / "jobs" / "agent", calls


@pytest.fixture(scope="module")
def read_back(tmp_path_factory, harbor_job, agent_job) -> dict[str, tuple[Path, dict]]:
    """The hand-made cases and the BankingAgent's job exported in process, the Harbor job by
    `bankbench export` as a user runs it; all three read back by one ragas process."""
    root = tmp_path_factory.mktemp("ragas")
    export_nemo(case_job(root / "cases"), root / "cases-out")
    manifest = export_nemo(agent_job[0], root / "agent-out")
    assert manifest.skipped == {}
    env = {**os.environ, "HARBOR_TELEMETRY": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    cli = subprocess.run([str(Path(sys.executable).parent / "bankbench"), "export",
                          str(harbor_job), "--format", "nemo-evaluator",
                          "--out", str(root / "harbor-out")],
                         env=env, capture_output=True, text=True, timeout=300)
    assert cli.returncode == 0, cli.stderr
    outs = {"cases": root / "cases-out", "harbor": root / "harbor-out",
            "agent": root / "agent-out"}
    return dict(zip(outs, zip(outs.values(), ragas_read_back(*outs.values()), strict=True),
                    strict=True))


@pytest.mark.parametrize("strict_order", [True, False], ids=["strict", "unordered"])
def test_ragas_tool_call_accuracy_matches_the_mapping(read_back, strict_order):
    out, read = read_back["cases"]
    assert read["rows"] == dict.fromkeys(FAMILIES, len(CASES))
    key = "tool_call_accuracy" if strict_order else "tool_call_accuracy_unordered"
    got = _by_trial(out, read[key])
    want = {name: (strict if strict_order else unordered)
            for name, (_, _, strict, unordered) in CASES.items()}
    assert got == pytest.approx(want)


@pytest.mark.harbor
def test_real_harbor_jobs_scored_by_ragas(read_back, harbor_job):
    """The oracle's trials score 1 with ragas, the nop agent's 0, and bankbench's own TSQ
    agrees on every one."""
    out, read = read_back["harbor"]
    trials = len(SCENARIOS) * len(AGENTS)
    assert read["rows"] == dict.fromkeys(FAMILIES, trials)
    agent_of = {p.parent.name: TrialResult.model_validate_json(p.read_text()).agent_info.name
                for p in harbor_job.glob("*/result.json")}
    index = _index(out)
    assert sorted(agent_of[row["trial"]] for row in index) == sorted(AGENTS * len(SCENARIOS))
    want = [1.0 if agent_of[row["trial"]] == "oracle" else 0.0 for row in index]
    assert read["tool_call_accuracy"] == want
    assert [row["tsq"] for row in index] == want


def test_agent_job_export_scored_by_ragas(read_back, agent_job):
    out, read = read_back["agent"]
    _, calls = agent_job
    index = [json.loads(line) for line in (out / INDEX_FILE).read_text().splitlines()]
    position = {row["scenario_id"]: i for i, row in enumerate(index)}
    assert index[position[A]]["scored_attempt"] == 2

    n_b = len(calls[B])
    strict, unordered = read["tool_call_accuracy"], read["tool_call_accuracy_unordered"]
    assert strict[position[A]] == 1.0 and unordered[position[A]] == 1.0
    assert strict[position[B]] == 0.0
    assert unordered[position[B]] == pytest.approx((n_b - 1) / n_b)

    rows = [json.loads(line) for line in (out / "agent_goal_accuracy.jsonl").read_text()
            .splitlines()]
    row_a = rows[position[A]]
    assert row_a["response"] == ANSWER_A  # the scored attempt's answer, not attempt 1's
    assert row_a["user_input"][0]["content"].startswith("Customer: ")
    turns = [m for m in row_a["user_input"] if m.get("tool_calls")]
    assert len(turns) == 1  # attempt 2 made its calls in one model turn; attempt 1 is not there
    assert [c["name"] for c in turns[0]["tool_calls"]] == [name for name, _ in calls[A]]
    replies = [m for m in row_a["user_input"] if m["type"] == "tool"]
    assert len(replies) == len(calls[A])  # the bank's replies the agent saw, one per call
