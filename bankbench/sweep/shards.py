"""One level run by several Harbor processes at once (`--shards N`).

The level's tasks are split over N shards whose concurrencies sum to the level; each shard is
an ordinary Harbor job in `c<level>/s<k>/` with its own tasks (harbor -i), started together
with the others. A shard that fails (its Harbor dies, is killed) costs only its own unfinished
trials: the others run to their end, the level is marked failed, and `--resume` continues each
unfinished shard with `harbor job resume` (see contracts/sweep.py for the layout).
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from bankbench import procs
from bankbench.sweep import harbor_job, progress
from contracts.atomic import write_atomic
from contracts.sweep import (
    SHARD_FILE,
    ShardRecord,
    SweepConfig,
    level_dir,
    level_dir_name,
    shard_dir_name,
)


def concurrencies(level: int, shards: int) -> list[int]:
    """Split `level` over min(shards, level) shards as evenly as it goes (sums to level)."""
    n = min(shards, level)
    return [level // n + (1 if k < level % n else 0) for k in range(n)]


def task_names(tasks_dir: Path, limit: int | None) -> list[str]:
    """The tasks Harbor runs for `--path tasks_dir --n-tasks limit`: task folders in name
    order, the first `limit` of them (Harbor's own order, so shards run the same trials)."""
    names = sorted(p.name for p in tasks_dir.iterdir() if (p / "task.toml").is_file())
    return names[:limit] if limit else names


def split_tasks(names: list[str], weights: list[int]) -> list[list[str]]:
    """Deal tasks to shards in proportion to their concurrency (largest remainder), in
    contiguous runs of the name order; every task goes to exactly one shard."""
    total = sum(weights)
    exact = [len(names) * w / total for w in weights]
    counts = [int(x) for x in exact]
    for k in sorted(range(len(weights)), key=lambda k: exact[k] - counts[k], reverse=True):
        if sum(counts) == len(names):
            break
        counts[k] += 1
    out, start = [], 0
    for c in counts:
        out.append(names[start:start + c])
        start += c
    return out


def plan(config: SweepConfig, tasks_dir: Path, level: int) -> list[ShardRecord]:
    conc = concurrencies(level, config.shards)
    tasks = split_tasks(task_names(tasks_dir, config.limit), conc)
    return [ShardRecord(level=level, shard=k, n_shards=len(conc), concurrency=c, tasks=t,
                        host=socket.gethostname())
            for k, (c, t) in enumerate(zip(conc, tasks, strict=True))]


def read_record(job: Path) -> ShardRecord | None:
    try:
        return ShardRecord.model_validate_json((job / SHARD_FILE).read_text())
    except (OSError, ValueError):
        return None


def write_record(job: Path, record: ShardRecord) -> None:
    job.mkdir(parents=True, exist_ok=True)
    write_atomic(job / SHARD_FILE, record.model_dump_json(indent=2))


@dataclass
class _Running:
    record: ShardRecord
    job: Path
    log: Path
    proc: object  # subprocess.Popen


def shard_command(config: SweepConfig, sweep_dir: Path, record: ShardRecord, tasks_dir: Path,
                  base_url: str, model: str,
                  also: Callable[[Path], str | None] | None = None) -> list[str] | None:
    """The Harbor command that brings one shard to complete: run, resume, or None (done)."""
    job = level_dir(sweep_dir, record.level) / shard_dir_name(record.shard)
    state = harbor_job.job_state(job)
    if state is harbor_job.JobState.COMPLETE:
        return None
    if state is harbor_job.JobState.PARTIAL:
        quarantine = (sweep_dir / "quarantine" / level_dir_name(record.level)
                      / shard_dir_name(record.shard))
        for moved, why in harbor_job.quarantine_unfinished_trials(job, quarantine, also=also):
            print(f"  {moved.name}: {why}; moved to {quarantine}, its trial runs again",
                  flush=True)
        return harbor_job.resume_command(job)
    return harbor_job.harbor_run_argv(
        config, tasks_dir=tasks_dir, sweep_dir=job.parent, job_name=job.name,
        level=record.concurrency, base_url=base_url, model=model, include=record.tasks)


def run_level(config: SweepConfig, sweep_dir: Path, level: int, tasks_dir: Path,
              base_url: str, model: str, *, watch: Callable[[], str | None] | None = None,
              also: Callable[[Path], str | None] | None = None, poll_s: float = 2.0,
              report_every_s: float = 10.0, watch_every_s: float = 10.0) -> list[str]:
    """Bring every shard of `level` to complete, all at once; returns one line per shard that
    failed (empty when all finished). A resumed level keeps the split it was started with.
    `watch` and `also` are run_job's and quarantine_unfinished_trials': a reason from `watch`
    (the server is gone) stops every shard and raises JobAborted."""
    ldir = level_dir(sweep_dir, level)
    records = [read_record(ldir / shard_dir_name(r.shard)) or r
               for r in plan(config, tasks_dir, level)]
    env = dict(os.environ, HARBOR_TELEMETRY="0", LITELLM_LOCAL_MODEL_COST_MAP="True")
    running: list[_Running] = []
    try:
        for record in records:
            job = ldir / shard_dir_name(record.shard)
            cmd = shard_command(config, sweep_dir, record, tasks_dir, base_url, model, also)
            if cmd is None:
                print(f"  c{level} shard {record.shard}: already complete", flush=True)
                continue
            log = sweep_dir / "logs" / f"{level_dir_name(level)}.{job.name}.harbor.log"
            write_record(job, record)  # before Harbor starts: the tasks are known, not guessed
            log.parent.mkdir(parents=True, exist_ok=True)
            with log.open("ab") as out:
                out.write(("\n$ " + " ".join(cmd) + "\n").encode())
            proc = procs.spawn(cmd, log, env=env, die_with_parent=True)
            record.host, record.pid, record.state = socket.gethostname(), proc.pid, "running"
            record.started_at, record.error = datetime.now(UTC), None
            write_record(job, record)
            running.append(_Running(record, job, log, proc))
        print(f"  c{level}: {len(running)} shard(s) running, concurrency "
              f"{' + '.join(str(r.record.concurrency) for r in running) or '-'}", flush=True)
        _wait(running, level, ldir, poll_s, report_every_s, watch, watch_every_s)
    except (KeyboardInterrupt, harbor_job.JobAborted):
        for r in running:
            harbor_job.stop_process_group(r.proc)  # type: ignore[arg-type]
        raise
    failed = []
    for r in running:
        code = r.proc.returncode  # type: ignore[attr-defined]
        r.record.finished_at = datetime.now(UTC)
        r.record.state = harbor_job.job_state(r.job).value if code == 0 else "failed"
        if code != 0:
            r.record.error = f"harbor exited with {code}; see {r.log}"
            failed.append(f"shard {r.record.shard} ({r.record.concurrency} of {level}): "
                          f"{r.record.error}\n{harbor_job.tail(r.log, 8)}")
        write_record(r.job, r.record)
    return failed


def _wait(running: list[_Running], level: int, ldir: Path, poll_s: float,
          report_every_s: float, watch: Callable[[], str | None] | None,
          watch_every_s: float) -> None:
    last_line, last_time, last_watch = None, 0.0, time.monotonic()
    while any(r.proc.poll() is None for r in running):  # type: ignore[attr-defined]
        time.sleep(poll_s)
        if watch is not None and time.monotonic() - last_watch >= watch_every_s:
            last_watch = time.monotonic()
            if reason := watch():
                raise harbor_job.JobAborted(reason)
        line = progress.line(level, ldir)
        now = time.monotonic()
        if line and line != last_line and now - last_time >= report_every_s:
            print(line, flush=True)
            last_line, last_time = line, now
    line = progress.line(level, ldir)
    if line and line != last_line:
        print(line, flush=True)
