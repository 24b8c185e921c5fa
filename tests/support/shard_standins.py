"""A level's shards with a stand-in command (a sleeping process) in place of Harbor, and whether
their processes are gone: for the executors' stop tests, local and on Ray."""

from __future__ import annotations

import sys
from pathlib import Path

from bankbench.sweep import executors, level, shards
from contracts.sweep import SweepConfig

SIGINT_MARK, READY_MARK = "stand-in-got-sigint", "stand-in-ready"


def stand_in_launches(config: SweepConfig, sweep_dir: Path, level_n: int,
                      seconds: int = 60) -> list[executors.Launch]:
    """The level's planned shards, each with a stand-in command in place of Harbor: a Python
    process that sleeps for `seconds` and, stopped by SIGINT (the first step of Harbor's stop),
    leaves SIGINT_MARK in its shard's job folder, as Harbor given SIGINT writes what it can
    (READY_MARK there once it listens for it, reading "SIGINT ignored" where it inherited an
    ignored SIGINT, which Harbor would keep). Python, not a shell: like Harbor it keeps the
    signal mask it inherits, where a shell clears it."""
    planned = level.plan(config, sweep_dir, sweep_dir / "tasks", level_n)
    for shard in planned:
        shards.write_record(shard.job, shard.record)
    return [executors.Launch(s, [sys.executable, "-I", "-S", "-c", _STAND_IN.format(
        sigint=str(s.job / SIGINT_MARK), ready=str(s.job / READY_MARK), seconds=seconds)])
        for s in planned]


_STAND_IN = """
import signal, sys, time
def stop(*_):
    open({sigint!r}, "w").close()
    sys.exit(130)
ignored = signal.signal(signal.SIGINT, stop) == signal.SIG_IGN
open({ready!r}, "w").write("SIGINT ignored" if ignored else "")
time.sleep({seconds})
"""


def stopped(pids: list[int | None]) -> bool:
    import psutil

    return all(pid and not (psutil.pid_exists(pid) and
                            psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
               for pid in pids)
