"""How a level is split into shards, and how its folder reads back (no server needed)."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import pytest

from bankbench.sweep import executors, harbor_job, level, shards, stop
from bankbench.sweep.harbor_job import JobState
from contracts.sweep import ShardRecord, SweepConfig, level_jobs
from tests.support.built_tasks import empty_tasks
from tests.support.shard_standins import stand_in_launches, stopped


@pytest.mark.parametrize("level,n,expected", [(8, 2, [4, 4]), (7, 3, [3, 2, 2]),
                                              (2, 4, [1, 1]), (1, 1, [1])])
def test_concurrencies_sum_to_the_level_and_never_leave_a_shard_idle(level, n, expected):
    assert shards.concurrencies(level, n) == expected


@pytest.mark.parametrize("n_tasks,weights", [(14, [4, 4]), (14, [3, 2, 2]), (5, [1, 1]),
                                             (1, [2, 1]), (30, [5, 5, 5, 4])])
def test_every_task_goes_to_one_shard_in_proportion(n_tasks, weights):
    names = [f"banking-{i:03d}" for i in range(n_tasks)]
    parts = shards.split_tasks(names, weights)
    assert [n for part in parts for n in part] == names  # each once, order kept
    for part, w in zip(parts, weights, strict=True):
        assert abs(len(part) - n_tasks * w / sum(weights)) < 1


def test_shards_leave_an_unsharded_fingerprint_alone_and_change_a_sharded_one():
    base = dict(base_url="http://127.0.0.1:1/v1", model="m")
    assert SweepConfig(**base).fingerprint() == SweepConfig(**base, shards=1).fingerprint()
    assert SweepConfig(**base, shards=2).fingerprint() != SweepConfig(**base).fingerprint()


def test_a_shard_is_prepared_with_its_tasks_and_its_concurrency(tmp_path):
    config = SweepConfig(base_url="http://127.0.0.1:1/v1", model="m", shards=2, limit=3)
    tasks = empty_tasks(tmp_path, 5)
    planned = level.plan(config, tmp_path, tasks, 4)
    assert [(s.concurrency, s.tasks) for s in planned] == [
        (2, ["banking-000", "banking-001"]), (2, ["banking-002"])]
    cmd = level.prepare(planned[1], config, tasks, "http://127.0.0.1:1/v1", "m")
    assert cmd is not None
    assert cmd[cmd.index("-n") + 1] == "2"
    assert [cmd[i + 1] for i, a in enumerate(cmd) if a == "-i"] == ["banking-002"]
    assert "--n-tasks" not in cmd  # the shard's tasks replace the limit
    assert cmd[cmd.index("--jobs-dir") + 1] == str(tmp_path / "c4")
    assert cmd[cmd.index("--job-name") + 1] == "s1"
    # Its record is written before Harbor starts: a resume keeps the split.
    assert shards.read_record(tmp_path / "c4" / "s1").tasks == ["banking-002"]


def test_an_unsharded_level_is_one_shard_whose_job_is_the_level_folder(tmp_path):
    config = SweepConfig(base_url="http://127.0.0.1:1/v1", model="m", limit=3)
    planned = level.plan(config, tmp_path, empty_tasks(tmp_path, 5), 4)
    assert [(s.job, s.concurrency, s.tasks, s.record) for s in planned] == [
        (tmp_path / "c4", 4, None, None)]
    cmd = level.prepare(planned[0], config, tmp_path / "tasks", "http://127.0.0.1:1/v1", "m")
    assert cmd[cmd.index("--job-name") + 1] == "c4" and "--n-tasks" in cmd
    assert not (tmp_path / "c4").exists()  # nothing of a shard's on disk


def _job(path: Path, trials: int, finished: bool, n_shards: int | None = None) -> None:
    path.mkdir(parents=True)
    (path / "config.json").write_text("{}")
    result = {"n_total_trials": trials, "finished_at": "2026-01-01T00:00:00" if finished else None}
    (path / "result.json").write_text(json.dumps(result))
    for i in range(trials):
        trial = path / f"t{i}"
        trial.mkdir()
        (trial / "config.json").write_text("{}")
        (trial / "result.json").write_text(json.dumps(
            {"trial_name": f"t{i}", "task_name": f"banking-{i:03d}",
             "verifier_result": {"rewards": {"tsq": 1}}}))
    if n_shards:
        (path / "shard.json").write_text(ShardRecord(
            level=2, shard=int(path.name[1:]), n_shards=n_shards, concurrency=1, tasks=[],
            host="h").model_dump_json())


def test_a_sharded_level_is_complete_only_when_every_shard_is(tmp_path):
    config = SweepConfig(base_url="http://127.0.0.1:1/v1", model="m", shards=2)
    tasks = empty_tasks(tmp_path, 3)
    folder = tmp_path / "c2"
    assert level.state(level.plan(config, tmp_path, tasks, 2)) is JobState.ABSENT
    _job(folder / "s0", 2, finished=True, n_shards=2)
    assert level_jobs(folder) == [folder / "s0"]
    # s1 never started
    assert level.state(level.plan(config, tmp_path, tasks, 2)) is JobState.PARTIAL
    _job(folder / "s1", 1, finished=False, n_shards=2)
    assert level.state(level.plan(config, tmp_path, tasks, 2)) is JobState.PARTIAL
    (folder / "s1" / "result.json").write_text(json.dumps(
        {"n_total_trials": 1, "finished_at": "2026-01-01T00:00:00"}))
    assert level.state(level.plan(config, tmp_path, tasks, 2)) is JobState.COMPLETE
    assert len(harbor_job.trial_dirs(folder)) == 3
    single = tmp_path / "c1"
    _job(single, 1, finished=True)
    assert level_jobs(single) == [single]
    assert harbor_job.job_state(single) is JobState.COMPLETE


def dying_server(after: int = 1):
    """A watch that answers for `after` checks, then says the server is gone."""
    calls = []

    def watch() -> str | None:
        calls.append(1)
        return "the server at 127.0.0.1:1 stopped answering" if len(calls) > after else None
    return watch


def test_a_dead_server_stops_every_shard_of_the_level(tmp_path):
    """`watch` saying the server is gone stops all the level's shard processes and raises
    JobAborted (the Ray executor does the same: test_shards_ray.py)."""
    config = SweepConfig(base_url="http://127.0.0.1:1/v1", model="m", shards=2)
    empty_tasks(tmp_path, 2)
    launches = stand_in_launches(config, tmp_path, 2)
    pacer = executors.Pacer(dying_server(), None, watch_every_s=0.1)
    with pytest.raises(harbor_job.JobAborted, match="stopped answering"):
        executors.run_local(launches, pacer, poll_s=0.05)
    assert stopped([shards.read_record(ln.shard.job).pid for ln in launches])


# A shard that, given SIGINT, finishes only once every shard of its level has been given it
# (as Harbor given SIGINT writes its results, never mind the others), and notes a SIGTERM.
_WAITS_FOR_THE_OTHERS = """
import os, signal, sys, time
marks, me, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
def mark(kind):
    open(os.path.join(marks, me + "." + kind), "w").close()
def on_int(*_):
    mark("int")
    while sum(f.endswith(".int") for f in os.listdir(marks)) < n:
        time.sleep(0.02)
    sys.exit(130)
def on_term(*_):
    mark("term")
    sys.exit(143)
signal.signal(signal.SIGINT, on_int)
signal.signal(signal.SIGTERM, on_term)
mark("ready")
time.sleep(600)
"""


def test_the_shards_of_a_level_are_stopped_together(tmp_path, monkeypatch):
    """Ctrl-C gives every shard its SIGINT before any shard's SIGINT wait is over: shards that
    each finish only once all have been asked all end on SIGINT. Stopped one after another,
    the first would wait out its SIGINT rung for the others and get SIGTERM."""
    n = 3
    config = SweepConfig(base_url="http://127.0.0.1:1/v1", model="m", shards=n)
    empty_tasks(tmp_path, n)
    marks = tmp_path / "marks"
    marks.mkdir()
    planned = level.plan(config, tmp_path, tmp_path / "tasks", n)
    launches = [executors.Launch(s, [sys.executable, "-I", "-S", "-c", _WAITS_FOR_THE_OTHERS,
                                     str(marks), str(i), str(n)])
                for i, s in enumerate(planned)]

    def progress() -> None:  # Ctrl-C once every shard listens for it
        if len(list(marks.glob("*.ready"))) == n:
            stop._asked["signal"] = signal.SIGINT

    monkeypatch.setattr(stop, "_asked", {})
    with pytest.raises(KeyboardInterrupt):
        executors.run_local(launches, executors.Pacer(None, progress, report_every_s=0),
                            poll_s=0.05)
    assert sorted(p.name for p in marks.glob("*.int")) == [f"{i}.int" for i in range(n)]
    assert not list(marks.glob("*.term"))
    assert stopped([shards.read_record(ln.shard.job).pid for ln in launches])


def test_resuming_on_a_new_address_rewrites_every_shard_job(tmp_path):
    old, new = "http://127.0.0.1:1/v1", "http://127.0.0.1:2/v1"
    config = {"agents": [{"kwargs": {"base_url": old}}]}
    for shard in ("s0", "s1"):
        job = tmp_path / "c4" / shard
        (job / "banking-000__x").mkdir(parents=True)
        for path in (job / "config.json", job / "lock.json",
                     job / "banking-000__x" / "config.json"):
            path.write_text(json.dumps(config))
    assert harbor_job.rewrite_base_url(tmp_path / "c4", old, new) == 6
    texts = [p.read_text() for p in (tmp_path / "c4").rglob("*.json")]
    assert len(texts) == 6 and all(new in t and old not in t for t in texts)
