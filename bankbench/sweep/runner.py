"""The sweep loop: build tasks, bring a server up (or use one), run one Harbor job per
concurrency level with /metrics scraped around it, record sweep.json, write the report.

Every step is resumable: a level whose Harbor job is complete is skipped, a partial one is
continued with `harbor job resume` (Harbor reruns only unfinished trials), and a changed
configuration is refused.
"""

from __future__ import annotations

import os
import platform
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from bankbench import sweep_neighbours
from bankbench.serve import router_setup
from bankbench.serve.replay import scripted_sweep_config
from bankbench.sweep import harbor_job, lock, preflight, progress
from bankbench.sweep.errors import SweepError
from bankbench.sweep.manifest import (
    check_resumable,
    move_to_new_url,
    point_jobs_at,
    save_manifest,
)
from bankbench.sweep.provenance import git_sha, versions
from bankbench.sweep.server_checks import (
    Scraper,
    ServerWatch,
    check_server_or_fail,
    reusable_port,
    stop_leftover_server,
)
from bankbench.sweep.tasks import build_or_reuse_tasks, fallback_warning
from contracts.request_trace import REQUEST_TRACE_FILE
from contracts.sweep import (
    METRICS_AFTER,
    METRICS_BEFORE,
    SWEEP_FILE,
    LevelRecord,
    SweepConfig,
    SweepManifest,
    level_dir,
    level_dir_name,
)


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass
class SweepSession:
    """A sweep directory with its server up and its manifest saved: levels can be run in it."""

    config: SweepConfig
    sweep_dir: Path
    manifest: SweepManifest
    tasks_dir: Path
    base_url: str
    model: str
    scrape: Scraper  # one per sweep, so a server without /metrics is named once
    resume_command: str = "bankbench sweep --resume"
    watch: ServerWatch | None = None


@contextmanager
def open_sweep(config: SweepConfig, sweep_dir: Path, *, resume: bool = False,
               resume_command: str = "bankbench sweep --resume",
               claim: bool = False, port: int | None = None) -> Iterator[SweepSession]:
    """Build tasks, bring the server up (or check the given one) and write sweep.json; the
    server is stopped on the way out. `sweep` and `capacity` run their levels inside it.

    The sweep directory is locked for the whole block (lock.py): a second sweep or a resume
    aimed at a live sweep is refused at once. `claim`: `sweep_dir` is a default name, so a
    taken one becomes `<name>-2`… instead of a refusal. A new sweep that fails before its
    sweep.json is written removes the directory it created: refused runs leave nothing."""
    sweep_dir = sweep_dir.resolve()
    if resume and not sweep_dir.is_dir():
        raise SweepError(f"{sweep_dir}: no such sweep directory")
    preflight.check_options(config)
    if not resume and not config.profile:
        # Fail before anything is created, built or run: a dead URL would fail every trial.
        check_server_or_fail(config, str(config.base_url), str(config.model))
    created = False
    if not resume:
        if claim:
            sweep_dir, created = lock.claim_new_dir(sweep_dir), True
        elif not sweep_dir.exists():
            sweep_dir.mkdir(parents=True)
            created = True
    busy = ("wait for it to end, or stop it first (Ctrl-C in its terminal, or kill -INT with "
            "that pid)" if resume else "choose another --name")
    try:
        with lock.hold(sweep_dir, busy_hint=busy):
            with _open_locked(config, sweep_dir, resume=resume, resume_command=resume_command,
                              created=created, port=port) as session:
                yield session
    except lock.SweepBusy as exc:
        raise SweepError(str(exc)) from None


@contextmanager
def _open_locked(config: SweepConfig, sweep_dir: Path, *, resume: bool, resume_command: str,
                 created: bool, port: int | None = None) -> Iterator[SweepSession]:
    if resume:
        config = scripted_sweep_config(config, sweep_dir)  # scripted when it began: still so
        manifest: SweepManifest | None = check_resumable(config, sweep_dir)
        manifest = move_to_new_url(config, sweep_dir, manifest)
    else:
        if (sweep_dir / SWEEP_FILE).exists():
            raise SweepError(
                f"{sweep_dir} already holds a sweep; continue it with --resume {sweep_dir}, "
                "or choose another --name"
            )
        manifest = None
        if config.profile is None:
            print(f"server ok: {config.base_url} serves {config.model}", flush=True)
    saved = False
    try:
        prepared = build_or_reuse_tasks(config, sweep_dir, reuse=resume)
        tasks_dir, n_tasks = prepared.tasks_dir, prepared.n_tasks
        if manifest is None:  # a new sweep on cpu-mocker: its stack calls the oracle's tools
            config = scripted_sweep_config(config, sweep_dir, tasks_dir)
        if manifest is not None and manifest.dataset_fallback:  # a resumed sweep says it again
            print(fallback_warning(manifest.dataset_fallback), flush=True)
        too_big = [n for n in config.levels if n > n_tasks * config.attempts]
        if too_big:
            print(
                f"note: levels {too_big} exceed the {n_tasks * config.attempts} trials per "
                f"level ({n_tasks} tasks x {config.attempts} attempts); raise --attempts to "
                "load them fully",
                flush=True,
            )
        server = None
        try:
            if config.profile:
                from bankbench.serve import api

                if manifest is not None:
                    # The level jobs hold the first run's URL in their Harbor config: the
                    # resumed trials must find the server where the killed run had it.
                    stop_leftover_server(sweep_dir / "server")
                    port = port or reusable_port(manifest.base_url)
                print(f"starting server profile {config.profile} ...", flush=True)
                server = api.up(
                    config.profile, router=config.router, workers=config.workers,
                    model=config.model, options=dict(config.server_options),
                    state_dir=sweep_dir / "server", port=port,
                )
                base_url, model = server.base_url, server.model
                check_server_or_fail(config, base_url, model)
                print(f"server ready: {base_url} model {model}", flush=True)
            else:
                base_url, model = str(config.base_url), str(config.model)

            if manifest is None:
                manifest = SweepManifest(
                    name=sweep_dir.name, config=config,
                    fingerprint=config.fingerprint(), levels=config.levels,
                    attempts=config.attempts, server_profile=config.profile,
                    base_url=base_url, model=model, router=server.router if server else None,
                    router_setup=router_setup.of_state(server) if server else None,
                    tasks_dir=str(tasks_dir), n_tasks=n_tasks, dataset=prepared.dataset,
                    dataset_fallback=prepared.fallback,
                    versions=versions(server.versions if server else None),
                    git_sha=git_sha(),
                    host={"cpus": os.cpu_count(), "platform": platform.platform()},
                    started_at=_now(),
                    level_records=[
                        LevelRecord(level=n, job_dir=level_dir_name(n),
                                    router=server.router if server else None)
                        for n in config.levels
                    ],
                )
            else:
                if manifest.base_url != base_url:  # started on another port (--port)
                    point_jobs_at(sweep_dir, manifest, manifest.base_url, base_url)
                manifest.base_url, manifest.model = base_url, model
            save_manifest(sweep_dir, manifest)
            saved = True
            for warning in sweep_neighbours.announce(base_url, sweep_dir):
                print(warning, flush=True)
            yield SweepSession(config, sweep_dir, manifest, tasks_dir, base_url, model,
                               Scraper(base_url), resume_command,
                               ServerWatch(config, base_url, model))
        except KeyboardInterrupt:
            print(
                f"\nsweep interrupted; finished trials are kept. Continue with:\n"
                f"  {resume_command} {sweep_dir}",
                flush=True,
            )
            raise
        finally:
            sweep_neighbours.leave(sweep_dir)
            if server is not None:
                from bankbench.serve import api

                print("stopping the server this sweep started ...", flush=True)
                api.down(server)
    except BaseException:
        if created and not saved:
            # Nothing of this sweep exists yet: leave no half-made directory behind.
            shutil.rmtree(sweep_dir, ignore_errors=True)
        raise


def run_level(session: SweepSession, level: int) -> LevelRecord:
    """Run (skip if complete, continue if partial) one level's Harbor job in the session; a
    level the manifest does not list yet is added to it first. SweepError when the server is
    gone (checked before the level and while it runs): the sweep stops there, resumable."""
    manifest = session.manifest
    record = next((r for r in manifest.level_records if r.level == level), None)
    if record is None:
        record = LevelRecord(level=level, job_dir=level_dir_name(level))
        manifest.level_records.append(record)
        manifest.levels.append(level)
        save_manifest(session.sweep_dir, manifest)
    try:
        _run_level(session, record)
    except harbor_job.JobAborted as exc:
        if record.state == "running":  # a level refused before it started stays pending
            record.state = "failed"
            save_manifest(session.sweep_dir, manifest)
        raise SweepError(_server_gone_message(session, level, str(exc))) from None
    return record


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


def run_sweep(config: SweepConfig, sweep_dir: Path, *, resume: bool = False,
              claim: bool = False, port: int | None = None) -> Path:
    """Run (or continue) a sweep in `sweep_dir`; returns the path of report.md. `claim`: the
    directory name is a default one (a taken name becomes `<name>-2`…)."""
    from analysis.report import write_report

    with open_sweep(config, sweep_dir, resume=resume, claim=claim, port=port) as session:
        for record in list(session.manifest.level_records):
            run_level(session, record.level)
        session.manifest.finished_at = _now()
        save_manifest(session.sweep_dir, session.manifest)
        # Still under the sweep's lock: a resume cannot start while the report is written.
        print("writing the report ...", flush=True)
        report = write_report(session.sweep_dir)
        session.manifest.report = str(report)
        save_manifest(session.sweep_dir, session.manifest)
    if session.manifest.dataset_fallback:  # said at the start; said again where one looks last
        print(fallback_warning(session.manifest.dataset_fallback), flush=True)
    return report


def _infra_failed(trial: Path) -> str | None:
    """Why a finished trial must run again on resume: the server failed it (infra_failed) —
    it measured the outage, not the agent."""
    from analysis.progress import trial_status

    status, reason = trial_status(trial)
    return f"infra failure ({reason})" if status == "infra_failed" else None


def _copy_trace_lines(trace: Path, start: int, out: Path) -> None:
    """The server's request-trace lines written while this level ran (appended, so a resumed
    level keeps the lines of its first part)."""
    with trace.open("rb") as src, out.open("ab") as dst:
        src.seek(start)
        dst.write(src.read())


def _run_level(session: SweepSession, record: LevelRecord) -> None:
    config, sweep_dir, manifest = session.config, session.sweep_dir, session.manifest
    level = record.level
    job_dir = level_dir(sweep_dir, level)
    state = harbor_job.job_state(job_dir)
    if state is harbor_job.JobState.COMPLETE and record.state == "failed":
        # Harbor finished, but the server was lost under it: its infra failures run again.
        state = harbor_job.JobState.PARTIAL
    if state is harbor_job.JobState.COMPLETE:
        print(f"level {level}: already complete, skipped", flush=True)
        record.state = "complete"
        save_manifest(sweep_dir, manifest)
        return
    if session.watch is not None and (why := session.watch()):
        raise harbor_job.JobAborted(why)

    resumed = state is harbor_job.JobState.PARTIAL
    total = manifest.n_tasks * config.attempts
    print(f"level {level}: {'resuming' if resumed else 'running'} (-n {level}, {total} trials)",
          flush=True)
    record.state, record.resumed = "running", record.resumed or resumed
    record.started_at = record.started_at or _now()
    save_manifest(sweep_dir, manifest)

    # Scrape after Harbor has created the job folder would be racy; scrape into the sweep dir
    # first and move it in once the job folder exists.
    before = sweep_dir / f".{level_dir_name(level)}-{METRICS_BEFORE}"
    have_before = session.scrape(before)
    if resumed:
        try:
            harbor_job.wait_for_earlier_harbor(sweep_dir)
        except harbor_job.HarborFailed as exc:
            raise SweepError(f"level {level}: {exc}") from None
    if config.sharded:
        _run_shards(session, record, have_before, before)
        return
    if resumed:
        quarantine = sweep_dir / "quarantine" / level_dir_name(level)
        for moved, why in harbor_job.quarantine_unfinished_trials(job_dir, quarantine,
                                                                  also=_infra_failed):
            print(f"  {moved.name}: {why}; moved to {quarantine}, its trial runs again",
                  flush=True)
        cmd = harbor_job.resume_command(job_dir)
    else:
        cmd = harbor_job.harbor_run_argv(
            config, tasks_dir=session.tasks_dir, sweep_dir=sweep_dir,
            job_name=level_dir_name(level), level=level, base_url=session.base_url,
            model=session.model,
        )
    log_path = sweep_dir / "logs" / f"{level_dir_name(level)}.harbor.log"
    trace = sweep_dir / "server" / REQUEST_TRACE_FILE
    trace_from = trace.stat().st_size if trace.is_file() else 0
    started, done_before = time.monotonic(), len(harbor_job.finished_trials(job_dir))
    try:
        harbor_job.run_job(
            cmd, log_path=log_path, job_dir=job_dir,
            progress=lambda d: progress.line(level, d, total=total, started=started,
                                             done_before=done_before),
            watch=session.watch,
        )
    except harbor_job.HarborFailed as exc:
        record.state = "failed"
        save_manifest(sweep_dir, manifest)
        raise SweepError(f"level {level}: {exc}") from exc
    if session.watch is not None and any(_infra_failed(t)
                                         for t in harbor_job.finished_trials(job_dir)):
        # Harbor can finish a level between two watches with the server already gone.
        if why := session.watch():
            raise harbor_job.JobAborted(why)

    _close_level(session, record, (have_before, before), (trace, trace_from))


def _close_level(session: SweepSession, record: LevelRecord, metrics_before: tuple[bool, Path],
                 trace_span: tuple[Path, int], failed: bool = False) -> None:
    """After a level's Harbor run(s): scrape /metrics again, move the earlier scrape and the
    level's slice of the server's request trace into the job folder, record the level's state."""
    job_dir = level_dir(session.sweep_dir, record.level)
    (have_before, before), (trace, trace_from) = metrics_before, trace_span
    have_after = session.scrape(job_dir / METRICS_AFTER) if job_dir.exists() else False
    if have_before and job_dir.exists():
        os.replace(before, job_dir / METRICS_BEFORE)
    record.metrics = have_before and have_after
    if trace.is_file() and job_dir.exists():
        _copy_trace_lines(trace, trace_from, job_dir / REQUEST_TRACE_FILE)
    record.state = "failed" if failed else harbor_job.job_state(job_dir).value
    record.finished_at = _now()
    save_manifest(session.sweep_dir, session.manifest)


def _run_shards(session: SweepSession, record: LevelRecord, have_before: bool,
                before: Path) -> None:
    """The level as shards (bankbench/sweep/shards.py, or Ray tasks with --ray), all started
    together; a failed shard fails the level after the others finish, and --resume continues
    only what is unfinished."""
    from bankbench.sweep import ray_shards, shards

    config, sweep_dir, level = session.config, session.sweep_dir, record.level
    trace = sweep_dir / "server" / REQUEST_TRACE_FILE
    trace_from = trace.stat().st_size if trace.is_file() else 0
    record.shards = len(shards.concurrencies(level, config.shards))
    run = ray_shards.run_level if config.ray else shards.run_level
    failed = run(config, sweep_dir, level, session.tasks_dir, session.base_url, session.model,
                 watch=session.watch, also=_infra_failed)
    _close_level(session, record, (have_before, before), (trace, trace_from), failed=bool(failed))
    if failed:
        raise SweepError(f"level {level}: " + "\n".join(failed)
                         + "\nfinished trials are kept; --resume runs the rest")
