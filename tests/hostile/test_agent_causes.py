"""What an agent can cause counts against the agent, on the real `harbor run` with
LocalEnvironment (cause_agents.py): its exit code, its printed text, what it reports to Harbor,
the exceptions it raises, the files it leaves and the output of its commands.

For every hostile trial: the job finishes, the trial is read and counted in quality, with no
more than its honest bank call earns (its reward, or 0 without one); the honest trial that ran
beside them keeps its score. Trial folders go to a 256 MiB tmpfs, standing in for a host's
/dev/shm, so that output the harness keeps on the host would fill it for every trial.

`BANKBENCH_HOSTILE_AGENTS=Name,Name` runs only those agents (the others' checks skip): one
attack at a time.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import cause_agents
import escape_agents
import pandas as pd
import pytest

from analysis.report import write_report
from analysis.tables import load
from tests.support.hostile_trials import attacks, bank_calls, honest_reward, result, trials
from tests.support.sample_job import run_sample_job

pytestmark = [pytest.mark.harbor, pytest.mark.timeout(900)]

HERE = Path(__file__).resolve().parent
TASK = "banking-002"
CHOSEN = [n for n in os.environ.get("BANKBENCH_HOSTILE_AGENTS", "").split(",") if n]
AGENTS = {name: getattr(cause_agents, name).name() for name in CHOSEN or cause_agents.ALL}
STATE_MB = 256
BOUNDS = {"scratch_mb": 64, "max_file_mb": 64, "max_processes": 128,
          "max_log_entries": escape_agents.LOG_ENTRIES}


@pytest.fixture(scope="module")
def state_dir(tmp_path_factory) -> Path:
    """A small memory filesystem for the trial folders, when this host lets us mount one."""
    state = tmp_path_factory.mktemp("state")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={STATE_MB}m,mode=0700",
                              "tmpfs", str(state)], capture_output=True).returncode == 0
    yield state if mounted else None
    if mounted:
        subprocess.run(["umount", "-l", str(state)], capture_output=True)


@pytest.fixture(scope="module")
def job(tmp_path_factory, state_dir) -> Path:
    bounds = {**BOUNDS, **({"state_dir": str(state_dir)} if state_dir else {})}
    return run_sample_job(
        tmp_path_factory.mktemp("causes"), "causes", (TASK,),
        # The flooder first with an honest agent beside it (which waits for the flood), the
        # rest, then the oracle: honest trials start during the flood and after it.
        agents=[{"import_path": f"cause_agents:{name}"} for name in AGENTS][:1]
        + [{"import_path": "cause_agents:PatientHonest"}]
        + [{"import_path": f"cause_agents:{name}"} for name in AGENTS][1:]
        + [{"name": "oracle"}],
        n_concurrent=4, env_kwargs=bounds, pythonpath=(HERE,), timeout=800,
    )


@pytest.fixture(scope="module")
def tables(job):
    """The job as the analysis reads it, once for every test that only reads it."""
    return load(job)


def trial_of(job: Path, cls: str) -> Path:
    if cls not in AGENTS:
        pytest.skip(f"{cls} not run (BANKBENCH_HOSTILE_AGENTS)")
    return trials(job)[(AGENTS[cls], TASK)]


def task_dir(job: Path) -> Path:
    return Path(json.loads((job.parent.parent / "job.json").read_text())["tasks"][0]["path"])


def test_the_job_finishes_with_every_trial(job):
    found = trials(job)
    assert set(found) == {(name, TASK) for name in [*AGENTS.values(), "patient-honest",
                                                     "oracle"]}
    assert json.loads((job / "result.json").read_text())["finished_at"]


@pytest.mark.parametrize("cls", cause_agents.ALL)
def test_each_hostile_trial_counts_with_no_more_than_its_honest_call_earns(job, tables, cls):
    trial = trial_of(job, cls)
    assert len(bank_calls(trial)) == 1  # the honest call landed
    row = tables.trials.set_index("trial").loc[trial.name]
    assert row.in_quality, (row.status, row.status_reason)
    assert row.status in ("scored", "agent_failed")
    earned = honest_reward(trial, task_dir(job))["tsq"]
    assert row.tsq <= earned
    rewards = result(trial).verifier_result
    assert row.tsq == (rewards.rewards["tsq"] if rewards else 0.0)


def test_the_honest_trials_beside_them_keep_their_scores(job, tables):
    rows = tables.trials.set_index("trial")
    oracle = rows.loc[trials(job)[("oracle", TASK)].name]
    assert (oracle.status, oracle.tsq) == ("scored", 1.0), oracle.status_reason
    patient = trials(job)[("patient-honest", TASK)]
    row = rows.loc[patient.name]
    assert row.status == "scored", row.status_reason
    assert row.tsq == honest_reward(patient, task_dir(job))["tsq"]
    assert len(bank_calls(patient)) == 1


def test_a_call_log_out_of_every_range_is_read_not_dropped(job, tables, tmp_path):
    trial = trial_of(job, "CallLogOverflower")
    row = tables.trials.set_index("trial").loc[trial.name]
    readable = tables.requests[tables.requests.trial == trial.name].set_index("request_id")
    # The server's free-form figures are read number by number: one out of range is dropped,
    # its record stays. Every other record out of range is unreadable, and counted.
    assert list(readable.index) == ["ok", "server"]
    assert pd.isna(readable.loc["server", "server_ttft_ms"])
    assert row.requests_unreadable == len(cause_agents.OVERFLOWING_LINES) - 2
    report = write_report(job, tmp_path / "report", draw=False)
    assert "unreadable" in report.read_text()


def test_files_harbor_parses_are_copied_only_when_valid(job):
    trial = trial_of(job, "TrajectoryBreaker")
    assert not (trial / "agent" / "trajectory.json").exists()
    kept = [p.name for p in (trial / "agent").iterdir()]
    assert any(name.startswith("trajectory.json.") for name in kept), kept
    note = json.loads((trial / "localenv.json").read_text())
    assert {r["path"] for r in note["files_rejected"]} >= {"/logs/agent/trajectory.json"}


def test_command_output_is_bounded_and_says_so(job):
    trial = trial_of(job, "OutputFlooder")
    done = attacks(trial)
    writers = done[1:1 + cause_agents.WRITER_COMMANDS]
    flood, later = done[-2:]
    assert all(w["return_code"] == 0 for w in writers)
    assert later["return_code"] == 0 and "still-here" in later["stdout"]
    assert "truncated" in flood["stderr"] or "kept the first" in flood["stderr"], \
        flood["stderr"][-500:]


def test_names_that_are_not_utf8_keep_the_note(job):
    trial = trial_of(job, "NameMangler")
    note = json.loads((trial / "localenv.json").read_text())
    left = note["logs_left_out"]
    assert left and sum(r["left_out"] for r in left) > 1000
    why = {e["why"] for r in left for e in r["examples"]}
    assert {"link", "special file", "too many entries"} <= why, why
    assert any("\\xff" in e["path"] for r in left for e in r["examples"])
