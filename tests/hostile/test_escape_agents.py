"""Agents that leave things behind (escape_agents.py) on the real `harbor run` with
LocalEnvironment: nothing of theirs runs after the agent phase, no link reaches the job folder,
Harbor's copy back into the trial writes nothing of theirs over the bank's record, a tree too
deep or too large costs their own logs only, and the trial's status is the harness's word.

Every trial's whole reward must equal a fresh scoring of the calls the bank recorded.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import escape_agents
import pytest

from analysis.files import read_agent_status, read_trial_result
from tests.support.hostile_trials import bank_calls, honest_reward, result, trials
from tests.support.sample_job import run_sample_job

pytestmark = [pytest.mark.harbor, pytest.mark.slow, pytest.mark.timeout(900)]

HERE = Path(__file__).resolve().parent
TASKS = ("banking-002",)
AGENTS = {"NamespaceSurvivor": "namespace-survivor", "LinkPlanter": "link-planter",
          "TreeGrower": "tree-grower", "StatusForger": "status-forger",
          "UploadSwapper": "upload-swapper"}
BOUNDS = {"max_file_mb": 16, "max_processes": 128,
          "max_log_entries": escape_agents.LOG_ENTRIES}


@pytest.fixture(scope="module")
def job(tmp_path_factory) -> Path:
    return run_sample_job(
        tmp_path_factory.mktemp("escape"), "escape", TASKS,
        agents=[{"import_path": f"escape_agents:{name}"} for name in AGENTS]
        + [{"name": "oracle"}],
        n_concurrent=3, env_kwargs=BOUNDS, pythonpath=(HERE,), timeout=800,
    )


def tasks_root(job: Path) -> Path:
    return Path(json.loads((job.parent.parent / "job.json").read_text())["tasks"][0]["path"])


def test_no_trial_errs_and_every_reward_is_what_the_honest_calls_earn(job):
    found = trials(job)
    assert {agent for agent, _ in found} == {*AGENTS.values(), "oracle"}
    for (agent, task), trial in found.items():
        assert result(trial).exception_info is None, (agent, result(trial).exception_info)
        rewards = result(trial).verifier_result.rewards
        assert rewards == honest_reward(trial, tasks_root(job).parent / task), agent
        if agent != "oracle":
            assert len(bank_calls(trial)) == 1, agent  # the one honest call, nothing forged


def test_nothing_of_the_agent_runs_during_verification(job):
    trial = trials(job)[("namespace-survivor", TASKS[0])]
    assert not (trial / "verifier/survivor-heartbeat").exists()
    note = json.loads((trial / "localenv.json").read_text())  # the environment's own record
    assert note["agent_processes_ended"] >= 2, note
    assert json.loads((trial / "verifier/reward.json").read_text()) == (
        result(trial).verifier_result.rewards)


def test_no_link_reaches_the_job_folder(job):
    for path in job.rglob("*"):
        assert not path.is_symlink(), path
    trial = trials(job)[("link-planter", TASKS[0])]
    names = {p.name for p in (trial / "agent").iterdir()}
    assert "intents.jsonl" in names and not names & {"root", "passwd", "jobs", "task", "up"}
    for trial in trials(job).values():  # nothing copied from a trial holds a host file or a label
        for path in [*(trial / "agent").rglob("*"), *(trial / "artifacts").rglob("*")]:
            if path.is_file():
                text = path.read_bytes()[:1_000_000]
                assert b"expected_tools" not in text and b"root:x:0:0" not in text, path


def test_a_tree_too_deep_or_too_large_costs_only_its_own_logs(job):
    trial = trials(job)[("tree-grower", TASKS[0])]
    depth = max(len(p.relative_to(trial).parts) for p in trial.rglob("*"))
    assert depth < 200
    count = sum(1 for _ in trial.rglob("*"))
    assert count < BOUNDS["max_log_entries"] + 500  # its own logs' share, and the rest
    note = json.loads((trial / "localenv.json").read_text())
    assert note["logs_left_out"], note
    base = Path(tempfile.gettempdir()) / "bankbench-local-env"  # every trial folder deleted
    assert not list(base.glob(f"{trial.name}-*"))


def test_the_status_is_the_harness_word(job):
    trial = trials(job)[("status-forger", TASKS[0])]
    issues: list = []
    status = read_agent_status(trial, issues, read_trial_result(trial, issues))
    assert status is None or status.status != "harness_error"
    oracle = trials(job)[("oracle", TASKS[0])]
    assert read_agent_status(oracle, [], read_trial_result(oracle, [])) is None


def test_the_copy_back_never_replaces_the_bank_record(job):
    trial = trials(job)[("upload-swapper", TASKS[0])]
    details = json.loads((trial / "verifier/tsq.json").read_text())
    assert details["actual_tools"] == [call["tool"] for call in bank_calls(trial)]
