"""The real `harbor run` CLI through LocalEnvironment: oracle scores 1.0, nop 0.0, timeouts
end the agent's processes, resume reruns only what is missing. Oracle and nop run as one job
(a job config naming both agents), so Harbor starts once for the pair."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from harbor.models.trial.result import TrialResult
from localenv_helpers import running_with_argv

from tests.support.built_tasks import build_sample_cli

pytestmark = [pytest.mark.harbor, pytest.mark.timeout(600)]

BIN = Path(sys.executable).parent
LOCAL_ENV = "environments.local:LocalEnvironment"

GREET = """#!/usr/bin/env python3
import json, sys
with open("/logs/agent/greetings.jsonl", "a") as f:
    f.write(json.dumps({"word": sys.argv[1]}) + "\\n")
print("greeted")
"""
TEST_SH = """#!/bin/bash
python3 - <<'PY'
import json, os
path = "/logs/agent/greetings.jsonl"
words = [json.loads(line)["word"] for line in open(path)] if os.path.exists(path) else []
json.dump({"tsq": 1.0 if "hello" in words else 0.0}, open("/logs/verifier/reward.json", "w"))
PY
"""
# Leaves a long sleep behind and never finishes; the agent timeout must end both.
HANG_SOLVE = "#!/bin/bash\nsleep 271 &\necho $! > /logs/agent/sleep.pid\nwait\n"


def write_tiny_task(tasks_dir: Path, name: str, solve: str, agent_timeout: float) -> None:
    task = tasks_dir / name
    for sub in ("environment", "tests", "solution"):
        (task / sub).mkdir(parents=True)
    (task / "task.toml").write_text(
        f'version = "1.0"\n[agent]\ntimeout_sec = {agent_timeout}\n[verifier]\ntimeout_sec = 30\n'
    )
    (task / "instruction.md").write_text("Greet with the word hello.\n")
    (task / "environment" / "Dockerfile").write_text(
        "FROM python:3.12-slim\nCOPY . /app\nWORKDIR /app\n"
    )
    (task / "environment" / "greet").write_text(GREET)
    (task / "environment" / "greet").chmod(0o755)
    (task / "tests" / "test.sh").write_text(TEST_SH)
    (task / "solution" / "solve.sh").write_text(solve)


def harbor(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HARBOR_TELEMETRY": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run(
        [str(BIN / "harbor"), *args], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=500,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def run_job(tasks: Path, agent: str, jobs: Path, name: str, concurrency: int) -> Path:
    harbor(
        "run", "--path", str(tasks), "--agent", agent, "--env", LOCAL_ENV,
        "--jobs-dir", str(jobs), "--job-name", name, "-n", str(concurrency), "-q",
        cwd=jobs.parent,
    )
    return jobs / name


def run_agents(tasks: Path, agents: list[str], jobs: Path, name: str,
               concurrency: int) -> Path:
    """One job running each of `agents` (Harbor's own, by name) on every task of `tasks`."""
    config = {"job_name": name, "jobs_dir": str(jobs), "n_concurrent_trials": concurrency,
              "quiet": True, "environment": {"import_path": LOCAL_ENV},
              "agents": [{"name": agent} for agent in agents],
              "tasks": [{"path": str(p.parent)} for p in sorted(tasks.glob("*/task.toml"))]}
    path = jobs.parent / f"{name}.json"
    path.write_text(json.dumps(config))
    harbor("run", "-c", str(path), cwd=jobs.parent)
    return jobs / name


def trial_results(job_dir: Path) -> dict[str, TrialResult]:
    """Each finished trial's result, by task name (Harbor's job result.json has no trials)."""
    return {task: trial for (_, task), (trial, _) in by_agent(job_dir).items()}


def by_agent(job_dir: Path) -> dict[tuple[str, str], tuple[TrialResult, Path]]:
    """Each finished trial's result and folder, by (agent name, task name)."""
    results = {}
    for result_file in sorted(job_dir.glob("*/result.json")):
        trial = TrialResult.model_validate_json(result_file.read_text())
        results[(trial.agent_info.name, trial.task_name)] = trial, result_file.parent
    return results


def reward(trial: TrialResult, key: str) -> float:
    assert trial.verifier_result is not None and trial.verifier_result.rewards is not None
    return trial.verifier_result.rewards[key]


def test_tiny_task_oracle_scores_one_and_nop_zero(tmp_path):
    tasks = tmp_path / "tasks"
    write_tiny_task(tasks, "tiny-hello", "#!/bin/bash\n/app/greet hello\n", agent_timeout=60)
    found = by_agent(run_agents(tasks, ["oracle", "nop"], tmp_path / "jobs", "pair", 2))
    (oracle, trial_dir), (nop, _) = found[("oracle", "tiny-hello")], found[("nop", "tiny-hello")]
    assert reward(oracle, "tsq") == 1.0
    assert reward(nop, "tsq") == 0.0
    assert oracle.exception_info is None and nop.exception_info is None
    # what the task wrote inside the environment came back to the trial folder
    assert (trial_dir / "agent" / "greetings.jsonl").read_text() == '{"word": "hello"}\n'


def test_agent_timeout_ends_the_solution_and_its_background_processes(tmp_path):
    tasks = tmp_path / "tasks"
    write_tiny_task(tasks, "tiny-hang", HANG_SOLVE, agent_timeout=3)
    job = run_job(tasks, "oracle", tmp_path / "jobs", "hang", 1)
    trial = trial_results(job)["tiny-hang"]
    assert trial.exception_info is not None
    assert trial.exception_info.exception_type == "AgentTimeoutError"
    assert reward(trial, "tsq") == 0.0  # the verifier still ran after the timeout
    trial_dir = next(job.glob("tiny-hang__*"))
    assert (trial_dir / "agent" / "sleep.pid").exists()  # its pid inside the trial's namespace
    assert not running_with_argv(b"sleep\x00271\x00")
    root = re.search(r"LocalEnvironment root: (\S+)", (trial_dir / "trial.log").read_text())
    assert root is not None and not Path(root.group(1)).exists()  # state dir deleted


@pytest.fixture(scope="module")
def sample_tasks(tmp_path_factory) -> Path:
    """The banking tasks built from bankbench's bundled sample (the oracle and nop score the
    same whatever labelled them: the cheap labels)."""
    out = build_sample_cli(tmp_path_factory.mktemp("bank") / "tasks")
    assert len(list(out.glob("*/task.toml"))) >= 4
    return out


def test_banking_tasks_oracle_one_nop_zero_and_resume(sample_tasks, tmp_path):
    """The acceptance run: every banking task scores tsq 1.0 with the oracle and 0.0 with
    nop through LocalEnvironment at concurrency 4, with no trial errored."""
    expected = {p.parent.name for p in sample_tasks.glob("*/task.toml")}
    job = run_agents(sample_tasks, ["oracle", "nop"], tmp_path / "jobs", "pair", 4)
    first = {key: trial for key, (trial, _) in by_agent(job).items()}
    assert set(first) == {(agent, name) for agent in ("oracle", "nop") for name in expected}
    for (agent, name), trial in first.items():
        assert trial.exception_info is None, (agent, name, trial.exception_info)
        if agent == "oracle":
            assert reward(trial, "tsq") == 1.0, name
            assert reward(trial, "param_validity") == 1.0, name
        else:
            assert reward(trial, "tsq") == 0.0, name

    # Resume: a trial whose result vanished is rerun; finished ones are left alone.
    victim = ("oracle", sorted(expected)[0])
    (by_agent(job)[victim][1] / "result.json").unlink()
    harbor("job", "resume", "-p", str(job), cwd=tmp_path)
    resumed = {key: trial for key, (trial, _) in by_agent(job).items()}
    assert set(resumed) == set(first)
    assert reward(resumed[victim], "tsq") == 1.0
    assert resumed[victim].id != first[victim].id
    assert all(resumed[key].id == first[key].id for key in set(first) - {victim})
