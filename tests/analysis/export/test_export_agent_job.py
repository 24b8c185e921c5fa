"""The export of a job the real BankingAgent ran (real `harbor run`, LocalEnvironment, the real
Dynamo frontend + mocker scripted by a replay trace, self-evaluation on), read back by ragas.

The scripts are made from each task's own expected tools, so the score ragas must give follows
from them: scenario A gets it wrong on attempt 1, is sent back by its evaluator and calls every
expected tool in goal order on attempt 2 (ToolCallAccuracy 1, from attempt 2 only); scenario B
calls them in reverse order with the first call's arguments rejected by the bank (strict order
0; unordered (n-1)/n, its param_validity).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from analysis.export.writer import INDEX_FILE, export_nemo
from bankbench.serve.replay import oracle_calls as task_calls
from bankbench.serve.replay import tool_call_text as tc
from tests.analysis.export.ragas_venv import ragas_read_back
from tests.support.built_tasks import build_sample

pytestmark = [pytest.mark.dynamo, pytest.mark.harbor, pytest.mark.slow,
              pytest.mark.timeout(900)]

A, B = "banking-000", "banking-001"
PREFIX = "x-"
ANSWER_A = "Everything you asked for is done."


def verdict(ok: bool) -> str:
    return json.dumps({"is_sufficient": ok, "confidence": 0.9, "reasoning": "scripted",
                       "missing_steps": [] if ok else ["the rest"]})


@pytest.fixture(scope="module")
def agent_job(tmp_path_factory) -> tuple[Path, dict[str, list[tuple[str, dict]]]]:
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
               "--job-name", "agent", "--ak", f"base_url={stack.base_url}",
               "--ak", "self_eval=true", "--ak", "max_retries=2",
               "--ak", f"nvext_annotations=output_replay_id:{PREFIX}{{scenario_id}}:"
                       "{request_index}"]
        done = subprocess.run(cmd, env=env, cwd=root, capture_output=True, text=True,
                              timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return root / "jobs" / "agent", calls


def test_agent_job_export_scored_by_ragas(agent_job, tmp_path):
    job, calls = agent_job
    manifest = export_nemo(job, tmp_path)
    assert manifest.skipped == {}
    index = [json.loads(line) for line in (tmp_path / INDEX_FILE).read_text().splitlines()]
    position = {row["scenario_id"]: i for i, row in enumerate(index)}
    assert index[position[A]]["scored_attempt"] == 2

    n_b = len(calls[B])
    (read,) = ragas_read_back(tmp_path)
    strict, unordered = read["tool_call_accuracy"], read["tool_call_accuracy_unordered"]
    assert strict[position[A]] == 1.0 and unordered[position[A]] == 1.0
    assert strict[position[B]] == 0.0
    assert unordered[position[B]] == pytest.approx((n_b - 1) / n_b)

    rows = [json.loads(line) for line in (tmp_path / "agent_goal_accuracy.jsonl").read_text()
            .splitlines()]
    row_a = rows[position[A]]
    assert row_a["response"] == ANSWER_A  # the scored attempt's answer, not attempt 1's
    assert row_a["user_input"][0]["content"].startswith("Customer: ")
    turns = [m for m in row_a["user_input"] if m.get("tool_calls")]
    assert len(turns) == 1  # attempt 2 made its calls in one model turn; attempt 1 is not there
    assert [c["name"] for c in turns[0]["tool_calls"]] == [name for name, _ in calls[A]]
    replies = [m for m in row_a["user_input"] if m["type"] == "tool"]
    assert len(replies) == len(calls[A])  # the bank's replies the agent saw, one per call
