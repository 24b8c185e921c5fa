"""Running one level in an open sweep: check the watch, scrape, run the level's plan, close the
level; and more repeats of a level already run (its extra passes).

Each run of a level's Harbor job(s) is recorded in its `LevelRecord.runs` (started, ended, and
where a stopped run left trials unfinished), so the level's measured window is cut per run and
never spans a pause (analysis/windows.py). An interrupted level is recorded `interrupted`.
"""

from __future__ import annotations

import os
import time
from datetime import datetime
from pathlib import Path

from bankbench import hostload
from bankbench.hostload import HostSampler
from bankbench.sweep import harbor_job, progress, stop
from bankbench.sweep import level as level_plan
from bankbench.sweep.errors import SweepError
from bankbench.sweep.executors import Launch, Outcome, Pacer, run_local
from bankbench.sweep.manifest import save_manifest
from bankbench.sweep.session import SweepSession, now
from contracts.request_trace import REQUEST_TRACE_FILE
from contracts.sweep import (
    METRICS_AFTER,
    METRICS_BEFORE,
    LevelPass,
    LevelRecord,
    LevelRun,
    level_dir_name,
    pass_dir_name,
)


def _record(session: SweepSession, level: int) -> LevelRecord:
    """The level's record; a level the manifest does not list yet is added to it first."""
    manifest = session.manifest
    record = next((r for r in manifest.level_records if r.level == level), None)
    if record is None:
        record = LevelRecord(level=level, job_dir=level_dir_name(level))
        manifest.level_records.append(record)
        manifest.levels.append(level)
        save_manifest(session.sweep_dir, manifest)
    return record


def run_level(session: SweepSession, level: int) -> LevelRecord:
    """Run (skip if complete, continue if partial) one level's Harbor job(s) in the session,
    and any extra pass of it not finished yet; a level the manifest does not list yet is added
    to it first. SweepError when the server is gone (checked before the level and while it
    runs): the sweep stops there, resumable. Ctrl-C records the level `interrupted`."""
    record = _record(session, level)
    parts: list[tuple[int, LevelRecord | LevelPass]] = [(0, record)]
    parts += [(n, p) for n, p in enumerate(record.passes, start=1)]
    for number, holder in parts:
        _run_guarded(session, record, number, holder)
    return record


def add_repeats(session: SweepSession, level: int, repeats: int) -> LevelRecord:
    """Run `repeats` more repeats per scenario of a level already run (sequential repeats), as
    one more pass in `c<level>.p<n>/` at the same concurrency, after the level and any earlier
    pass are complete; -k is raised to the steady-state minimum like the level's own. Passes
    run one after another, so no repeat of one pass runs beside a repeat of another. The
    manifest records it first: an interrupted pass is finished by `--resume` (run_level)."""
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    record = run_level(session, level)  # the level and earlier passes first
    number = len(record.passes) + 1
    record.passes.append(LevelPass(job_dir=pass_dir_name(level, number), repeats=repeats))
    save_manifest(session.sweep_dir, session.manifest)
    _run_guarded(session, record, number, record.passes[-1])
    return record


def repeats_planned(record: LevelRecord) -> int:
    """Repeats per scenario the level and its passes run (their -k summed)."""
    first = record.repeats or 0
    return first + sum(p.attempts or p.repeats for p in record.passes)


def ensure_repeats(session: SweepSession, level: int, repeats: int) -> LevelRecord:
    """The level run to complete with at least `repeats` repeats per scenario: the level (and
    any pass) finished first, then one more pass for what is missing; nothing more when the
    level already holds them (idempotent)."""
    record = run_level(session, level)
    missing = repeats - repeats_planned(record)
    return add_repeats(session, level, missing) if missing > 0 else record


def _run_guarded(session: SweepSession, record: LevelRecord, number: int,
                 holder: LevelRecord | LevelPass) -> None:
    try:
        stop.check()
        _run_part(session, record, number, holder)
    except harbor_job.JobAborted as exc:
        if holder.state == "running":  # a level refused before it started stays pending
            holder.state = "failed"
            save_manifest(session.sweep_dir, session.manifest)
        raise SweepError(_server_gone_message(session, record.level, str(exc))) from None
    except KeyboardInterrupt:
        if holder.state == "running":
            holder.state = "interrupted"
            save_manifest(session.sweep_dir, session.manifest)
        raise


def _server_gone_message(session: SweepSession, level: int, why: str) -> str:
    how = f"  {session.resume_command} {session.sweep_dir}"
    if session.config.profile:
        where = ("(the resumed sweep starts its server again on the same port; "
                 "--port PORT picks another)")
    else:
        where = ("(if it comes back at another address, add --base-url NEW_URL; "
                 "`bankbench serve up --port PORT` brings a stack back on its old port)")
    return (f"level {level}: {why}; the sweep stopped. Finished trials are kept; those the "
            f"lost server failed run again on resume. Once the server is back, continue "
            f"with:\n{how}\n{where}")


def _run_part(session: SweepSession, record: LevelRecord, number: int,
              holder: LevelRecord | LevelPass) -> None:
    """The level itself (number 0, state on `record`) or its extra pass `number` (state on its
    LevelPass): check the watch, scrape, run the plan, close."""
    config, sweep_dir, manifest = session.config, session.sweep_dir, session.manifest
    level = record.level
    repeats = holder.repeats if isinstance(holder, LevelPass) else None
    planned = level_plan.plan(config, sweep_dir, session.tasks_dir, level,
                              pass_number=number, repeats=repeats)
    name = pass_dir_name(level, number)
    what = f"level {level}" + (f" pass {number}" if number else "")
    state = level_plan.state(planned)
    # Harbor finished, but the server was lost under it: its infra failures run again.
    reopen = holder.state == "failed"
    if state is harbor_job.JobState.COMPLETE and not reopen:
        print(f"{what}: already complete, skipped", flush=True)
        holder.state = "complete"
        save_manifest(sweep_dir, manifest)
        return
    if session.watch is not None and (why := session.watch()):
        raise harbor_job.JobAborted(why)

    resumed = state is not harbor_job.JobState.ABSENT
    total = sum(s.trials for s in planned)
    k = sorted({s.attempts for s in planned})
    print(f"{what}: {'resuming' if resumed else 'running'} (-n {level}, {total} trials, "
          f"-k {'/'.join(map(str, k))})", flush=True)
    holder.state = "running"
    if isinstance(holder, LevelPass):
        holder.attempts = planned[0].attempts
    if number == 0:
        record.resumed = record.resumed or resumed
        record.started_at = record.started_at or now()
        record.repeats = planned[0].attempts
        if config.sharded:
            record.shards = len(planned)
    if resumed and record.runs and record.runs[-1].cut_at is None:
        record.runs[-1].cut_at = _earliest_unfinished(planned, reopen)
    save_manifest(sweep_dir, manifest)

    # Scrape after Harbor has created the job folder would be racy; scrape into the sweep dir
    # first and move it in once the job folder exists.
    before = sweep_dir / f".{name}-{METRICS_BEFORE}"
    have_before = session.scrape(before)
    if resumed:
        try:
            harbor_job.wait_for_earlier_harbor(sweep_dir)
        except harbor_job.HarborFailed as exc:
            raise SweepError(f"{what}: {exc}") from None
    launches = []
    for shard in planned:
        cmd = level_plan.prepare(shard, config, session.tasks_dir, session.base_url,
                                 session.model, reopen=reopen)
        if cmd is None:
            print(f"  {shard.name}: already complete", flush=True)
        else:
            launches.append(Launch(shard, cmd))
    trace = sweep_dir / "server" / REQUEST_TRACE_FILE
    trace_from = trace.stat().st_size if trace.is_file() else 0
    folder = sweep_dir / name
    started, done_before = time.monotonic(), len(harbor_job.finished_trials(folder))
    pacer = Pacer(session.watch, lambda: progress.line(
        level, folder, total=total, started=started, done_before=done_before))
    run = LevelRun(started_at=now())
    record.runs.append(run)
    save_manifest(sweep_dir, manifest)
    # How busy the client host was while the level ran, in c<level>/ for every part of the
    # level (a resume, an extra pass): combined by their seconds (bankbench/hostload.py).
    sampler = HostSampler(session.server_pids)
    try:
        with sampler:
            outcomes = _execute(config.ray, launches, pacer)
    finally:
        run.finished_at = now()
        save_manifest(sweep_dir, manifest)
        hostload.save(sweep_dir / level_dir_name(level), sampler.result)
    for outcome in outcomes:
        level_plan.mark_finished(outcome.shard, outcome.code, outcome.error, outcome.host)
    if session.watch is not None and any(harbor_job.infra_failed(t)
                                         for t in harbor_job.finished_trials(folder)):
        # Harbor can finish a level between two watches with the server already gone.
        if why := session.watch():
            raise harbor_job.JobAborted(why)
    failed = [o.shard.failure(o.code, o.error) for o in outcomes if not o.ok]
    _close(session, folder, holder, planned, (have_before, before), (trace, trace_from),
           failed=bool(failed))
    if failed:
        raise SweepError(f"{what}: " + "\n".join(failed)
                         + "\nfinished trials are kept; --resume runs the rest")


def _execute(ray: str | None, launches: list[Launch], pacer: Pacer) -> list[Outcome]:
    if ray:
        from bankbench.sweep.ray_shards import run_ray

        return run_ray(launches, pacer, address=ray)
    return run_local(launches, pacer)


def _earliest_unfinished(planned: list[level_plan.Shard], reopen: bool) -> datetime | None:
    """Where the previous run of this level left its measured part: the earliest start of a
    trial it did not finish (one `prepare` will move aside, or Harbor will run again)."""
    starts = [t for shard in planned for t in level_plan.unfinished_starts(shard, reopen)]
    return min(starts, default=None)


def _copy_trace_lines(trace: Path, start: int, out: Path) -> None:
    """The server's request-trace lines written while this level ran (appended, so a resumed
    level keeps the lines of its first part)."""
    with trace.open("rb") as src, out.open("ab") as dst:
        src.seek(start)
        dst.write(src.read())


def _close(session: SweepSession, folder: Path, holder: LevelRecord | LevelPass,
           planned: list[level_plan.Shard], metrics_before: tuple[bool, Path],
           trace_span: tuple[Path, int], failed: bool = False) -> None:
    """After a level's Harbor run(s): scrape /metrics again, move the earlier scrape and the
    level's slice of the server's request trace into its folder, record the level's state."""
    (have_before, before), (trace, trace_from) = metrics_before, trace_span
    have_after = session.scrape(folder / METRICS_AFTER) if folder.exists() else False
    if have_before and folder.exists():
        os.replace(before, folder / METRICS_BEFORE)
    if trace.is_file() and folder.exists():
        _copy_trace_lines(trace, trace_from, folder / REQUEST_TRACE_FILE)
    holder.state = "failed" if failed else level_plan.state(planned).value
    if isinstance(holder, LevelRecord):
        holder.metrics = have_before and have_after
        holder.finished_at = now()
    save_manifest(session.sweep_dir, session.manifest)
