"""Analysis on a job written by the real `harbor run` (oracle agent, LocalEnvironment).

The oracle's solution writes one llm_calls.jsonl line and an agent_status.json into
/logs/agent, so the whole path — Harbor's trial layout, its result.json, our files — is the
real one. A status written inside the task environment is anyone's word, not the harness's:
a finished trial's status comes from what the agent reported to Harbor in process (the
oracle reports none), so the solutions' `agent_error` and `infra_error` change nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from analysis.report import write_report
from analysis.tables import load

pytestmark = [pytest.mark.harbor, pytest.mark.timeout(600)]

TEST_SH = """#!/bin/bash
python3 - <<'PY'
import json, os
ok = os.path.exists("/logs/agent/done")
json.dump({"tsq": 1.0 if ok else 0.0, "precision": 1.0, "recall": 1.0 if ok else 0.0,
           "param_validity": 1.0}, open("/logs/verifier/reward.json", "w"))
PY
"""


def solve(status: str, ttft_ms: float, extra: str = "") -> str:
    call = {"request_id": f"r-{ttft_ms}", "trial_name": "t", "scenario_id": "s", "attempt": 1,
            "step": 1, "role": "agent", "model": "m", "start_unix_ns": 1_700_000_000_000_000_000,
            "ttft_ms": ttft_ms, "itl_ms": [2.0, 4.0], "e2e_ms": ttft_ms + 6.0,
            "prompt_tokens": 50, "completion_tokens": 3, "cached_tokens": 10,
            "http_status": 200}
    return (f"#!/bin/bash\necho '{json.dumps(call)}' >> /logs/agent/llm_calls.jsonl\n"
            f"echo '{json.dumps({'status': status, 'reason': None})}' "
            f"> /logs/agent/agent_status.json\n{extra}")


def write_task(tasks: Path, name: str, solution: str, timeout: float = 60) -> None:
    task = tasks / name
    for sub in ("environment", "tests", "solution"):
        (task / sub).mkdir(parents=True)
    (task / "task.toml").write_text(
        f'version = "1.0"\n[agent]\ntimeout_sec = {timeout}\n[verifier]\ntimeout_sec = 30\n')
    (task / "instruction.md").write_text("Help the customer.\n")
    (task / "environment" / "Dockerfile").write_text("FROM python:3.12-slim\nCOPY . /app\n")
    (task / "tests" / "test.sh").write_text(TEST_SH)
    (task / "solution" / "solve.sh").write_text(solution)


@pytest.fixture(scope="module")
def real_job(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("real")
    tasks, jobs = root / "tasks", root / "jobs"
    write_task(tasks, "banking-000", solve("ok", 10.0, "touch /logs/agent/done\n"))
    write_task(tasks, "banking-001", solve("agent_error", 20.0))
    write_task(tasks, "banking-002", solve("infra_error", 30.0, "touch /logs/agent/done\n"))
    write_task(tasks, "banking-003", solve("ok", 40.0, "sleep 30\n"), timeout=2)
    env = {**os.environ, "HARBOR_TELEMETRY": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run(
        [str(Path(sys.executable).parent / "harbor"), "run", "--path", str(tasks),
         "--agent", "oracle", "--env", "environments.local:LocalEnvironment",
         "--jobs-dir", str(jobs), "--job-name", "real", "-n", "2", "-q"],
        cwd=root, env=env, capture_output=True, text=True, timeout=500)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return jobs / "real"


def test_real_job_statuses_timings_and_calls(real_job):
    tables = load(real_job)
    trials = tables.trials.set_index("scenario_id")
    assert dict(trials["status"]) == {"banking-000": "scored", "banking-001": "scored",
                                      "banking-002": "scored",
                                      "banking-003": "agent_failed"}
    assert trials["agent_status"].isna().all()
    assert trials.loc["banking-003", "exception_type"] == "AgentTimeoutError"
    assert trials.loc["banking-000", "tsq"] == 1.0 and trials.loc["banking-001", "tsq"] == 0.0
    assert set(tables.trials["level"]) == {2}
    assert (trials.loc[["banking-000", "banking-001"], ["agent_s", "verifier_s", "total_s"]]
            > 0).all().all()
    assert sorted(tables.requests["ttft_ms"]) == [10.0, 20.0, 30.0, 40.0]
    assert tables.issues.empty, tables.issues.to_string()


def test_real_job_report(real_job, tmp_path):
    report = write_report(real_job, out=tmp_path / "report")
    text = report.read_text()
    assert "| real | 2 | 4 | 3 | 1 | 0 | 0 | 0 | 0 | 4 | 0 |" in text
    assert "AgentTimeoutError" in text
