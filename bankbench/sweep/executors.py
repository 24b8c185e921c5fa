"""Running what a level's plan prepared: the Harbor commands of its shards, all started
together, watched while they run, stopped together.

Two executors take the same launches and give the same outcomes: `run_local` (child processes
of this sweep, on this host) and `ray_shards.run_ray` (Ray tasks on a cluster). Both use one
Harbor child environment and one log header (harbor_job.harbor_env / announce), and one
`Pacer`: the dead-server watch and the progress line at the same pace. A reason from the watch,
or Ctrl-C, stops every shard of the level and raises (JobAborted / KeyboardInterrupt).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass

from bankbench import procs
from bankbench.sweep import harbor_job, stop
from bankbench.sweep.level import Shard, mark_started


@dataclass
class Launch:
    """A shard and the command `level.prepare` gave it."""

    shard: Shard
    cmd: list[str]


@dataclass
class Outcome:
    """How a shard's Harbor ended: its exit code (None: it never reported one), and the one
    line an executor knows more than the code (a Ray task or node that died)."""

    shard: Shard
    code: int | None
    error: str | None = None
    host: str | None = None

    @property
    def ok(self) -> bool:
        return self.code == 0


class Pacer:
    """The level's clock while its shards run: `watch` (is the server still there?) every
    `watch_every_s`, and the progress line whenever it changed, at most every
    `report_every_s`."""

    def __init__(self, watch: Callable[[], str | None] | None,
                 progress: Callable[[], str | None] | None, *, watch_every_s: float = 10.0,
                 report_every_s: float = 10.0) -> None:
        self.watch, self.progress = watch, progress
        self.watch_every_s, self.report_every_s = watch_every_s, report_every_s
        self.last_watch = time.monotonic()
        self.last_line: str | None = None
        self.last_time = 0.0

    def server_gone(self) -> str | None:
        """Why the server is considered gone, when a watch is due and says so; else None."""
        if self.watch is None or time.monotonic() - self.last_watch < self.watch_every_s:
            return None
        reason = self.watch()
        self.last_watch = time.monotonic()
        return reason

    def report(self, final: bool = False) -> None:
        # The line is read only when one may be printed: reading it re-reads every trial's
        # call records (~0.5 CPU-s at a dozen trials), and the executors poll every 2 s.
        now = time.monotonic()
        if self.progress is None or not (final or now - self.last_time >= self.report_every_s):
            return
        line = self.progress()
        if line and line != self.last_line:
            print(line, flush=True)
            self.last_line, self.last_time = line, now


def run_local(launches: list[Launch], pacer: Pacer, *, poll_s: float = 2.0) -> list[Outcome]:
    """Start every launch as a child process of this sweep and wait for all of them."""
    running: list[tuple[Launch, subprocess.Popen]] = []
    try:
        for launch in launches:
            harbor_job.announce(launch.cmd, launch.shard.log)
            # The parent-death signal makes a killed sweep take Harbor with it.
            proc = procs.spawn(launch.cmd, launch.shard.log, env=harbor_job.harbor_env(),
                               die_with_parent=True)
            mark_started(launch.shard, pid=proc.pid)
            running.append((launch, proc))
        if any(launch.shard.record is not None for launch in launches):
            print(f"  c{launches[0].shard.level}: {len(running)} shard(s) running, concurrency "
                  f"{' + '.join(str(ln.shard.concurrency) for ln, _ in running)}", flush=True)
        while alive := [proc for _, proc in running if proc.poll() is None]:
            # Waiting on a child (not sleeping) ends the level as soon as its last shard exits.
            try:
                alive[0].wait(timeout=poll_s)
            except subprocess.TimeoutExpired:
                pass
            stop.check()
            reason = pacer.server_gone()
            if reason and any(proc.poll() is None for _, proc in running):
                raise harbor_job.JobAborted(reason)
            pacer.report()
    except (KeyboardInterrupt, harbor_job.JobAborted):
        harbor_job.stop_process_groups([proc for _, proc in running])
        raise
    pacer.report(final=True)
    return [Outcome(launch.shard, proc.returncode) for launch, proc in running]
