"""A level's shards with a stand-in command (`sleep`) in place of Harbor, and whether their
processes are gone: for the executors' stop tests, local and on Ray."""

from __future__ import annotations

from pathlib import Path

from bankbench.sweep import executors, level, shards
from contracts.sweep import SweepConfig


def stand_in_launches(config: SweepConfig, sweep_dir: Path, level_n: int,
                      seconds: int = 60) -> list[executors.Launch]:
    """The level's planned shards, each with a stand-in command (`sleep`) in place of Harbor."""
    planned = level.plan(config, sweep_dir, sweep_dir / "tasks", level_n)
    for shard in planned:
        shards.write_record(shard.job, shard.record)
    return [executors.Launch(s, ["sleep", str(seconds)]) for s in planned]


def stopped(pids: list[int | None]) -> bool:
    import psutil

    return all(pid and not (psutil.pid_exists(pid) and
                            psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
               for pid in pids)
