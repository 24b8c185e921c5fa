"""The level runner without a server: how many trials a level runs, where its extra passes
live, what a resume does with job files a killed Harbor left broken, and that a stop asked for
is never lost."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from bankbench.sweep import executors, harbor_job, level, stop
from contracts.sweep import (
    SHARD_FILE,
    SweepConfig,
    level_of_dir,
    pass_dir_name,
    steady_repeats,
)
from tests.support.built_tasks import empty_tasks


@pytest.mark.parametrize("repeats,concurrency,n_tasks,steady,expected", [
    (1, 1, 14, 3, 1), (1, 8, 14, 3, 2), (2, 8, 14, 3, 2), (2, 64, 50, 3, 4),
    (3, 128, 50, 3, 8), (1, 16, 4, 0, 1), (5, 2, 14, 3, 5)])
def test_a_level_runs_at_least_steady_times_its_concurrency_trials(repeats, concurrency,
                                                                    n_tasks, steady, expected):
    k = steady_repeats(repeats, concurrency, n_tasks, steady)
    assert k == expected
    assert k >= repeats  # never fewer repeats than asked
    if steady:
        assert k * n_tasks >= steady * concurrency
        assert k == repeats or (k - 1) * n_tasks < steady * concurrency  # no more than needed


def test_the_plan_raises_k_per_shard_and_harbor_is_asked_for_it(tmp_path):
    tasks = empty_tasks(tmp_path, 4)
    config = SweepConfig(base_url="http://127.0.0.1:1/v1", model="m", attempts=2, steady=3)
    [one] = level.plan(config, tmp_path, tasks, 8)
    assert (one.attempts, one.trials) == (6, 24)  # 3 x 8 = 24 trials over 4 tasks
    cmd = level.prepare(one, config, tasks, "http://127.0.0.1:1/v1", "m")
    assert cmd[cmd.index("-k") + 1] == "6"
    sharded = SweepConfig(base_url="http://127.0.0.1:1/v1", model="m", attempts=2, shards=2,
                          steady=3)
    assert [(s.concurrency, s.n_tasks, s.attempts) for s in
            level.plan(sharded, tmp_path, tasks, 8)] == [(4, 2, 6), (4, 2, 6)]
    off = SweepConfig(base_url="http://127.0.0.1:1/v1", model="m", attempts=2)
    assert level.plan(off, tmp_path, tasks, 8)[0].attempts == 2  # a sweep's default: off


def test_an_extra_pass_is_its_own_job_folder_that_readers_fold_into_the_level(tmp_path):
    tasks = empty_tasks(tmp_path, 20)
    config = SweepConfig(base_url="http://127.0.0.1:1/v1", model="m")
    [extra] = level.plan(config, tmp_path, tasks, 4, pass_number=2, repeats=1)
    assert extra.job == tmp_path / "c4.p2" and extra.name == "c4.p2"
    assert (extra.attempts, extra.trials) == (1, 20)
    assert pass_dir_name(4, 0) == "c4" and level_of_dir("c4.p2") == 4
    assert level_of_dir("c4.x2") is None


def _partial_job(job: Path) -> None:
    """A job Harbor started (real config.json) with one finished trial."""
    from harbor.models.job.config import JobConfig

    job.mkdir(parents=True)
    (job / "config.json").write_text(JobConfig(job_name=job.name).model_dump_json())
    trial = job / "banking-000__a"
    trial.mkdir()
    (trial / "config.json").write_text("{}")
    (trial / "result.json").write_text(json.dumps(
        {"trial_name": trial.name, "task_name": "banking-000",
         "verifier_result": {"rewards": {"tsq": 1.0}}}))


@pytest.mark.parametrize("text,why", [("", "empty"), ('{"id": "4f', "cut short")])
def test_a_resume_sets_aside_a_job_result_a_killed_harbor_left_broken(tmp_path, capsys,
                                                                      text, why):
    config = SweepConfig(base_url="http://127.0.0.1:1/v1", model="m")
    [shard] = level.plan(config, tmp_path, empty_tasks(tmp_path, 2), 2)
    _partial_job(shard.job)
    (shard.job / "result.json").write_text(text)
    (shard.job / "lock.json").write_text("")
    assert harbor_job.broken_job_files(shard.job) == {"result.json": why, "lock.json": "empty"}
    cmd = level.prepare(shard, config, tmp_path / "tasks", "http://127.0.0.1:1/v1", "m")
    assert cmd == harbor_job.resume_command(shard.job)
    assert not (shard.job / "result.json").exists() and not (shard.job / "lock.json").exists()
    assert (shard.job / "banking-000__a" / "result.json").exists()  # the finished trial stays
    moved = sorted(p.name for p in shard.quarantine.iterdir())
    assert len(moved) == 2 and moved[0].endswith("lock.json")
    out = capsys.readouterr().out
    assert f"Harbor's result.json is {why}" in out and "Harbor writes it anew" in out


def test_a_job_whose_config_is_cut_short_is_moved_aside_and_run_afresh(tmp_path, capsys):
    config = SweepConfig(base_url="http://127.0.0.1:1/v1", model="m", shards=2)
    planned = level.plan(config, tmp_path, empty_tasks(tmp_path, 2), 2)
    shard = planned[1]
    _partial_job(shard.job)
    (shard.job / "config.json").write_text('{"job_na')
    cmd = level.prepare(shard, config, tmp_path / "tasks", "http://127.0.0.1:1/v1", "m")
    assert cmd[1] == "run" and cmd[cmd.index("--job-name") + 1] == "s1"
    assert sorted(p.name for p in shard.job.iterdir()) == [SHARD_FILE]  # its split kept
    [kept] = list(shard.quarantine.iterdir())
    assert (kept / "banking-000__a" / "result.json").exists()
    assert "config.json is cut short" in capsys.readouterr().out


def test_a_trial_whose_config_is_cut_short_is_rerun(tmp_path):
    config = SweepConfig(base_url="http://127.0.0.1:1/v1", model="m")
    [shard] = level.plan(config, tmp_path, empty_tasks(tmp_path, 2), 2)
    _partial_job(shard.job)
    (shard.job / "banking-000__a" / "config.json").write_text("")
    assert harbor_job.trial_problem(shard.job / "banking-000__a") == "cut short (its config.json)"


def test_a_stop_asked_for_is_raised_at_the_next_poll_even_if_the_first_was_lost(
        tmp_path, monkeypatch):
    """A KeyboardInterrupt raised inside a finalizer is printed and dropped by Python; the
    latch raises it again at the executor's next poll, and the shards are stopped."""
    monkeypatch.setattr(stop, "_asked", {})
    config = SweepConfig(base_url="http://127.0.0.1:1/v1", model="m", shards=2)
    empty_tasks(tmp_path, 2)
    launches = [executors.Launch(s, ["sleep", "600"])
                for s in level.plan(config, tmp_path, tmp_path / "tasks", 2)]
    polls = []

    def progress() -> None:
        polls.append(1)
        if len(polls) == 2:
            stop._asked["signal"] = 2  # what the handler records; its raise went nowhere
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        executors.run_local(launches, executors.Pacer(None, progress), poll_s=0.05)
    # long before the shards' sleep would have ended (a loaded host takes tens of seconds to
    # start and stop them)
    assert time.monotonic() - t0 < 300
    from tests.support.shard_standins import stopped

    assert stopped([level.shards.read_record(ln.shard.job).pid for ln in launches])
