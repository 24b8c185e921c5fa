"""A job's file names as Harbor's own `Job` names them, and trial folders as `TrialPaths` finds
them: the one place that names them outside the contracts agrees with Harbor."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from harbor.job import Job

from analysis.job_paths import JobPaths, is_job_dir, is_trial_dir, trial_folders
from analysis.synthetic import write_job, write_trial


def test_job_paths_are_harbors_job_properties(tmp_path):
    job = SimpleNamespace(job_dir=tmp_path / "job")  # what Job's path properties read
    paths = JobPaths(tmp_path / "job")
    assert paths.config_path == Job._job_config_path.fget(job)
    assert paths.result_path == Job._job_result_path.fget(job)
    assert paths.lock_path == Job._job_lock_path.fget(job)
    assert paths.log_path == Job._log_output_path.fget(job)


def test_trial_folders_are_those_harbor_wrote_a_config_for(tmp_path):
    job = write_job(tmp_path / "job", 1)
    write_trial(job, "b__1", scenario_id="b")
    write_trial(job, "a__1", scenario_id="a", running=True)
    (job / "stray").mkdir()  # no config.json: not a trial
    (job / "notes.txt").write_text("x")
    assert is_job_dir(job) and not is_job_dir(job / "stray")
    assert [p.name for p in trial_folders(job)] == ["a__1", "b__1"]
    assert is_trial_dir(job / "a__1") and not is_trial_dir(Path(job / "notes.txt"))
