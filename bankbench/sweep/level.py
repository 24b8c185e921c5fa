"""One level as a plan of shards, and the one rule for what each shard's Harbor runs next.

A level is run by one or more Harbor jobs. Unsharded, it is one shard whose job folder is
`c<level>/` itself (the layout every sweep has always had); with `--shards N` (or `--ray`) it
is `c<level>/s<k>/` per shard, each with its `shard.json` (bankbench/sweep/shards.py splits the
tasks). `prepare` decides, for every shard alike, whether its job is complete (skip), partial
(move aside what must run again, then `harbor job resume`) or absent (`harbor run`); the
executors (executors.py on this host, ray_shards.py on a Ray cluster) only run what it returns.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from harbor.models.trial.paths import TrialPaths

from analysis.job_paths import JobPaths
from bankbench.sweep import harbor_job, shards
from bankbench.sweep.harbor_job import JobState
from bankbench.sweep.session import now
from contracts.sweep import (
    SHARD_FILE,
    ShardRecord,
    SweepConfig,
    level_jobs,
    pass_dir_name,
    shard_dir_name,
    steady_repeats,
)


@dataclass
class Shard:
    """One Harbor job of a level: where it lives, its concurrency and tasks, and its files."""

    level: int
    job: Path  # the Harbor job folder: c<level>/ itself, or c<level>/s<k>/
    concurrency: int  # its harbor -n
    tasks: list[str] | None  # harbor -i each; None: the sweep's --limit
    record: ShardRecord | None  # shard.json of a sharded level; None unsharded
    quarantine: Path  # where trials that must run again are moved
    log: Path  # Harbor's output
    attempts: int = 1  # its harbor -k (repeats per task, raised for steady state)
    n_tasks: int = 0  # the tasks it runs

    @property
    def trials(self) -> int:
        return self.attempts * self.n_tasks

    @property
    def name(self) -> str:
        """How lines name it: `c4`, `c4.p1` (an extra pass), or `c4 shard 1`."""
        folder = self.job.parent if self.record is not None else self.job
        return folder.name + (f" shard {self.record.shard}" if self.record is not None else "")

    def failure(self, code: int | None, error: str | None = None) -> str:
        """One line (and Harbor's last lines) for a shard whose Harbor did not end well."""
        if self.record is None:
            return (error or f"harbor exited with {code}") + \
                f"; last lines of {self.log}:\n" + harbor_job.tail(self.log)
        where = f" on {self.record.host}" if self.record.node else ""
        why = error or f"harbor exited with {code}; see {self.log}"
        return (f"shard {self.record.shard} ({self.record.concurrency} of {self.level}){where}: "
                f"{why}\n{harbor_job.tail(self.log, 8)}")


def plan(config: SweepConfig, sweep_dir: Path, tasks_dir: Path, level: int, *,
         pass_number: int = 0, repeats: int | None = None) -> list[Shard]:
    """The level's shards: one (its job is `c<level>/`), or one per shard of `--shards`, each
    with the split its shard.json recorded when it first ran (a resumed level keeps it).
    `pass_number` n > 0 plans the level's extra pass in `c<level>.p<n>/`, with `repeats` per
    scenario. Each shard's -k is the repeats (--attempts for the level itself), raised so that
    it runs at least `config.steady` x its concurrency trials."""
    name = pass_dir_name(level, pass_number)
    ldir, repeats = sweep_dir / name, repeats or config.attempts
    logs, quarantine = sweep_dir / "logs", sweep_dir / "quarantine" / name
    if not config.sharded:
        n = len(shards.task_names(tasks_dir, config.limit))
        return [Shard(level, ldir, level, None, None, quarantine, logs / f"{name}.harbor.log",
                      steady_repeats(repeats, level, n, config.steady), n)]
    planned = []
    for fresh in shards.plan(config, tasks_dir, level):
        job = ldir / shard_dir_name(fresh.shard)
        record = shards.read_record(job) or fresh
        k = steady_repeats(repeats, record.concurrency, len(record.tasks), config.steady)
        planned.append(Shard(level, job, record.concurrency, record.tasks, record,
                             quarantine / job.name, logs / f"{name}.{job.name}.harbor.log",
                             k, len(record.tasks)))
    return planned


def state(planned: list[Shard]) -> JobState:
    """The level's state: complete when every shard's job is, absent when none has started."""
    states = [harbor_job.job_state(s.job) for s in planned]
    if all(s is JobState.COMPLETE for s in states):
        return JobState.COMPLETE
    if all(s is JobState.ABSENT for s in states):
        return JobState.ABSENT
    return JobState.PARTIAL


def folder_state(folder: Path) -> JobState:
    """A level's (or pass's) state from its folder alone, for callers without the sweep's
    config: its one job's, or its shard jobs' (complete only when as many as their shard.json
    files say are there and every one is complete)."""
    jobs = level_jobs(folder)
    if not jobs or jobs == [folder]:
        return harbor_job.job_state(folder)
    records = [r for r in (shards.read_record(j) for j in jobs) if r is not None]
    expected = records[0].n_shards if records else len(jobs)
    states = [harbor_job.job_state(j) for j in jobs]
    if len(jobs) == expected and all(s is JobState.COMPLETE for s in states):
        return JobState.COMPLETE
    return JobState.PARTIAL


def prepare(shard: Shard, config: SweepConfig, tasks_dir: Path, base_url: str, model: str,
            *, reopen: bool = False) -> list[str] | None:
    """The Harbor command that brings `shard` to complete, or None when it already is.

    Complete: nothing to run (unless `reopen`, the level failed, and the job holds trials
    the server failed: they run again). Partial: trials that are not results (cut short,
    interrupted, failed by the server) are moved to the shard's quarantine folder, one line
    each, and
    `harbor job resume` runs them again with the trials Harbor never finished. Absent:
    `harbor run` with the shard's concurrency and tasks."""
    job_state = harbor_job.job_state(shard.job)
    if job_state is JobState.COMPLETE and not (reopen and _has_infra_failures(shard)):
        return None
    if shard.record is not None:  # before Harbor starts: the tasks are known, not guessed
        shards.write_record(shard.job, shard.record)
    if job_state is JobState.ABSENT:
        return harbor_job.harbor_run_argv(
            config, tasks_dir=tasks_dir, sweep_dir=shard.job.parent, job_name=shard.job.name,
            level=shard.concurrency, base_url=base_url, model=model, include=shard.tasks,
            attempts=shard.attempts)
    if not _set_aside_broken_files(shard):
        return harbor_job.harbor_run_argv(
            config, tasks_dir=tasks_dir, sweep_dir=shard.job.parent, job_name=shard.job.name,
            level=shard.concurrency, base_url=base_url, model=model, include=shard.tasks,
            attempts=shard.attempts)
    for moved, why in harbor_job.quarantine_unfinished_trials(shard.job, shard.quarantine):
        print(f"  {moved.name}: {why}; moved to {shard.quarantine}, its trial runs again",
              flush=True)
    return harbor_job.resume_command(shard.job)


def _set_aside_broken_files(shard: Shard) -> bool:
    """A job file a killed Harbor left empty or cut short is moved to the quarantine folder,
    with a line saying so, never read: Harbor writes its result.json and lock.json anew on
    resume. A broken config.json leaves nothing to resume: the whole job folder is moved
    aside (its finished trials with it, kept there) and the shard runs afresh. False then."""
    broken = harbor_job.broken_job_files(shard.job)
    if not broken:
        return True
    shard.quarantine.mkdir(parents=True, exist_ok=True)
    stamp = now().strftime("%Y%m%dT%H%M%S")
    config = JobPaths(shard.job).config_path.name
    if config in broken:
        target = shard.quarantine / f"job-{stamp}"
        record = shard.job / SHARD_FILE
        kept = record.read_bytes() if record.exists() else None
        shard.job.rename(target)
        if kept is not None:
            shard.job.mkdir(parents=True)
            (shard.job / SHARD_FILE).write_bytes(kept)
        print(f"  {shard.name}: Harbor's {config} is {broken[config]}: the job "
              f"cannot be resumed; moved to {target}, its trials run again", flush=True)
        return False
    for name, why in broken.items():
        target = shard.quarantine / f"{stamp}-{name}"
        (shard.job / name).rename(target)
        print(f"  {shard.name}: Harbor's {name} is {why}; moved to {target}, Harbor writes "
              "it anew (finished trials are kept)", flush=True)
    return True


def _has_infra_failures(shard: Shard) -> bool:
    return any(harbor_job.infra_failed(t) for t in harbor_job.finished_trials(shard.job))


def unfinished_starts(shard: Shard, reopen: bool = False) -> list[datetime]:
    """When each trial of the shard's job that must run again started: those with no
    result.json (Harbor reruns them) and those `prepare` moves aside. Read before `prepare`."""
    if harbor_job.job_state(shard.job) is JobState.COMPLETE and not (
            reopen and _has_infra_failures(shard)):
        return []
    starts = []
    for trial in harbor_job.trial_dirs(shard.job):
        if TrialPaths(trial).result_path.exists() and not harbor_job.rerun_reason(trial):
            continue
        starts.append(harbor_job.trial_started_at(trial))
    return starts


def mark_started(shard: Shard, *, pid: int | None = None, node: str | None = None,
                 submitted: bool = False) -> None:
    """Record in shard.json that the shard's Harbor started here (or was handed to Ray)."""
    if shard.record is None:
        return
    record = shard.record
    record.state, record.error = ("submitted" if submitted else "running"), None
    if not submitted:
        record.host, record.pid, record.started_at = socket.gethostname(), pid, now()
        record.node = node or record.node
    shards.write_record(shard.job, record)


def mark_finished(shard: Shard, code: int | None, error: str | None = None,
                  host: str | None = None) -> None:
    if shard.record is None:
        return
    record = shards.read_record(shard.job) or shard.record  # a Ray task may have written it
    record.finished_at = now()
    record.host = host or record.host
    if code == 0:
        record.state = harbor_job.job_state(shard.job).value
    else:
        record.state = "failed"
        record.error = error or f"harbor exited with {code}; see {shard.log}"
    shard.record = record
    shards.write_record(shard.job, record)
