"""How a level is split into shards, and how its folder reads back (no server needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bankbench.sweep import harbor_job, shards
from contracts.sweep import ShardRecord, SweepConfig, level_jobs


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


def test_shard_command_names_its_tasks_and_its_concurrency(tmp_path):
    config = SweepConfig(base_url="http://127.0.0.1:1/v1", model="m", shards=2, limit=3)
    record = ShardRecord(level=4, shard=1, n_shards=2, concurrency=2,
                         tasks=["banking-001", "banking-002"], host="h")
    cmd = shards.shard_command(config, tmp_path, record, tmp_path / "tasks",
                               "http://127.0.0.1:1/v1", "m")
    assert cmd is not None
    assert cmd[cmd.index("-n") + 1] == "2"
    assert [cmd[i + 1] for i, a in enumerate(cmd) if a == "-i"] == ["banking-001",
                                                                    "banking-002"]
    assert "--n-tasks" not in cmd  # the shard's tasks replace the limit
    assert cmd[cmd.index("--jobs-dir") + 1] == str(tmp_path / "c4")
    assert cmd[cmd.index("--job-name") + 1] == "s1"


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
            {"trial_name": f"t{i}", "verifier_result": {"rewards": {"tsq": 1}}}))
    if n_shards:
        (path / "shard.json").write_text(ShardRecord(
            level=2, shard=int(path.name[1:]), n_shards=n_shards, concurrency=1, tasks=[],
            host="h").model_dump_json())


def test_a_sharded_level_is_complete_only_when_every_shard_is(tmp_path):
    level = tmp_path / "c2"
    _job(level / "s0", 2, finished=True, n_shards=2)
    assert level_jobs(level) == [level / "s0"]
    assert harbor_job.job_state(level) is harbor_job.JobState.PARTIAL  # s1 never started
    _job(level / "s1", 1, finished=False, n_shards=2)
    assert harbor_job.job_state(level) is harbor_job.JobState.PARTIAL
    (level / "s1" / "result.json").write_text(json.dumps(
        {"n_total_trials": 1, "finished_at": "2026-01-01T00:00:00"}))
    assert harbor_job.job_state(level) is harbor_job.JobState.COMPLETE
    assert len(harbor_job.trial_dirs(level)) == 3
    single = tmp_path / "c1"
    _job(single, 1, finished=True)
    assert level_jobs(single) == [single]
    assert harbor_job.job_state(single) is harbor_job.JobState.COMPLETE


def test_a_dead_server_stops_every_shard_of_the_level(tmp_path, monkeypatch):
    """`watch` saying the server is gone stops all the level's shard processes (here a
    stand-in command, `sleep`, in place of Harbor) and raises JobAborted."""
    import psutil

    tasks = tmp_path / "tasks"
    for name in ("banking-000", "banking-001"):
        (tasks / name).mkdir(parents=True)
        (tasks / name / "task.toml").write_text("")
    monkeypatch.setattr(shards, "shard_command", lambda *a, **k: ["sleep", "60"])
    config = SweepConfig(base_url="http://127.0.0.1:1/v1", model="m", shards=2)
    calls = []

    def watch() -> str | None:
        calls.append(1)
        return "the server at 127.0.0.1:1 stopped answering" if len(calls) > 1 else None

    with pytest.raises(harbor_job.JobAborted, match="stopped answering"):
        shards.run_level(config, tmp_path, 2, tasks, "http://127.0.0.1:1/v1", "m",
                         watch=watch, poll_s=0.05, watch_every_s=0.1)
    pids = [ShardRecord.model_validate_json((tmp_path / "c2" / s / "shard.json").read_text()).pid
            for s in ("s0", "s1")]
    assert all(pid and not (psutil.pid_exists(pid) and
                            psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
               for pid in pids)


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
