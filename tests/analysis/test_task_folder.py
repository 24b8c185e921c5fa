"""One finder for the task folder a trial ran (analysis.task_folder.find_task_dir), resolved
once when the trial is read and taken from `Tables.task_dirs` by every post-pass."""

from __future__ import annotations

import os

from analysis.synthetic import write_job, write_sweep_manifest, write_task_stub, write_trial
from analysis.tables import load
from analysis.task_folder import find_task_dir
from contracts.sweep import level_dir

REWARDS = {"tsq": 1.0}


def test_the_configs_path_first_then_the_sweeps_folder_then_a_moved_sweeps_tasks(tmp_path):
    named = write_task_stub(tmp_path / "named", "banking-000")
    job = write_job(tmp_path / "s" / "c1", 1)
    trial = write_trial(job, "banking-000__a", scenario_id="banking-000", rewards=REWARDS,
                        tasks_dir=tmp_path / "named")
    assert find_task_dir(trial, "banking-000") == named
    # The config's folder is gone: the sweep's own task folder, else tasks/ beside the job.
    gone = write_trial(job, "banking-000__b", scenario_id="banking-000", rewards=REWARDS,
                       tasks_dir=tmp_path / "gone")
    assert find_task_dir(gone, "banking-000") is None
    elsewhere = write_task_stub(tmp_path / "elsewhere", "banking-000")
    assert find_task_dir(gone, "banking-000", tmp_path / "elsewhere") == elsewhere
    moved = write_task_stub(tmp_path / "s" / "tasks", "banking-000")
    assert find_task_dir(gone, "banking-000") == moved


def test_a_relative_path_is_where_harbor_ran(tmp_path, monkeypatch):
    task = write_task_stub(tmp_path / "run" / "tasks", "banking-001")
    job = write_job(tmp_path / "run" / "jobs" / "j", 1)
    trial = write_trial(job, "banking-001__a", scenario_id="banking-001", rewards=REWARDS,
                        tasks_dir=os.path.relpath(tmp_path / "run" / "tasks", tmp_path / "run"))
    monkeypatch.chdir(tmp_path)  # not where Harbor ran: found above the job instead
    assert find_task_dir(trial, "banking-001") == tmp_path / "run" / "tasks" / "banking-001"
    assert task.is_dir()


def test_the_tables_keep_each_trials_task_folder_for_every_post_pass(tmp_path):
    sweep = tmp_path / "s"
    write_sweep_manifest(sweep, [1])
    job = write_job(level_dir(sweep, 1), 1)
    write_task_stub(sweep / "tasks", "banking-000", mode="conversation")
    write_trial(job, "banking-000__a", scenario_id="banking-000", rewards=REWARDS)
    write_trial(job, "banking-009__b", scenario_id="banking-009", rewards=REWARDS)
    tables = load(sweep)
    assert tables.task_dirs == {(sweep.name, "c1", "banking-000__a"): sweep / "tasks" /
                                "banking-000", (sweep.name, "c1", "banking-009__b"): None}
    row = tables.trials.set_index("trial").loc["banking-000__a"]
    assert row["mode"] == "conversation"  # read from the folder found
    first = tables.trials.iloc[0].to_dict()
    assert tables.task_dir(first) == sweep / "tasks" / "banking-000"
