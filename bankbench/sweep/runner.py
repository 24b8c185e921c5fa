"""The sweep loop: build tasks, bring a server up (or use one), run one Harbor job per
concurrency level with /metrics scraped around it, record sweep.json, write the report.

Every step is resumable: a level whose Harbor job is complete is skipped, a partial one is
continued with `harbor job resume` (Harbor reruns only unfinished trials), and a changed
configuration is refused.
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel

from bankbench.sweep import harbor_job, preflight, progress
from bankbench.sweep.provenance import git_sha, versions
from bankbench.sweep.tasks import fallback_warning, prepare_tasks
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


class SweepError(RuntimeError):
    """A sweep cannot start or go on; the message says why and what to do."""


def _now() -> datetime:
    return datetime.now(UTC)


def load_model[M: BaseModel](path: Path, model: type[M], what: str) -> M:
    """A pydantic JSON file the sweep wrote; SweepError naming the file when missing/corrupt."""
    try:
        return model.model_validate_json(path.read_text())
    except FileNotFoundError:
        raise SweepError(f"{path} not found: is {path.parent} a {what}?") from None
    except ValueError as exc:
        raise SweepError(f"{path} is corrupt ({exc.__class__.__name__}); cannot resume") from exc


def save_model(path: Path, data: BaseModel) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(data.model_dump_json(indent=2))
    os.replace(tmp, path)  # never leave a half-written file behind


def load_manifest(sweep_dir: Path) -> SweepManifest:
    return load_model(sweep_dir / SWEEP_FILE, SweepManifest, "sweep directory")


def save_manifest(sweep_dir: Path, manifest: SweepManifest) -> None:
    save_model(sweep_dir / SWEEP_FILE, manifest)


def check_resumable(config: SweepConfig, sweep_dir: Path) -> SweepManifest:
    manifest = load_manifest(sweep_dir)
    earlier = manifest.config
    if earlier.fingerprint() != config.fingerprint():
        diff = "; ".join(config.differences(earlier))
        raise SweepError(
            f"refusing to resume {sweep_dir}: the configuration changed ({diff}). "
            "Start a new sweep, or resume with the original options."
        )
    return manifest


class _Scraper:
    """Prometheus /metrics of the frontend, scraped around each level of one sweep.

    A server without /metrics (llama.cpp's, many hosted APIs) is normal: it is named once per
    sweep, not at every scrape of every level.
    """

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.said_missing = False

    def __call__(self, out: Path) -> bool:
        """Write the scrape to `out`; False (and no file) when the server has none."""
        from bankbench.serve import metrics

        try:
            metrics.scrape(self.base_url, out)
            return True
        except Exception as exc:
            if not self.said_missing:
                self.said_missing = True
                why = getattr(getattr(exc, "response", None), "status_code", None)
                why = f"HTTP {why}" if why else exc.__class__.__name__
                print(f"  (no /metrics from {self.base_url} ({why}): server-side counters "
                      "are not recorded for this sweep)", flush=True)
            return False


def _preflight(config: SweepConfig, base_url: str, model: str) -> None:
    key_env = config.agent_kwargs.get("api_key_env", preflight.DEFAULT_KEY_ENV)
    model = config.agent_kwargs.get("model", model)
    try:
        preflight.check_server(base_url, model, api_key_env=key_env)
    except preflight.PreflightFailed as exc:
        raise SweepError(f"server check failed, no trial was run: {exc}") from None


def _reusable_port(base_url: str, wait_s: float = 90.0) -> int | None:
    """The port of the first run's server, once the old one has let go of it."""
    from urllib.parse import urlsplit

    from bankbench import procs

    parts = urlsplit(base_url)
    if parts.hostname not in ("127.0.0.1", "localhost") or parts.port is None:
        return None
    deadline = time.monotonic() + wait_s
    while not procs.port_is_free(parts.port):  # closed connections linger for a while
        if time.monotonic() > deadline:
            raise SweepError(
                f"cannot resume: the level jobs talk to {base_url}, and port {parts.port} is "
                f"still in use after {wait_s:g} s; free it and run the resume again"
            )
        time.sleep(1.0)
    return parts.port


def _stop_leftover_server(state_dir: Path) -> None:
    """A sweep killed outright (SIGKILL, lost terminal) leaves the server it started running;
    the resumed sweep owns that state dir, so it stops the old stack before starting anew."""
    from bankbench.serve import api

    try:
        old = api.load_state(state_dir)
    except (FileNotFoundError, ValueError):
        return
    print(f"stopping the {old.profile} server left running by the interrupted sweep ...",
          flush=True)
    api.down(old)


@dataclass
class SweepSession:
    """A sweep directory with its server up and its manifest saved: levels can be run in it."""

    config: SweepConfig
    sweep_dir: Path
    manifest: SweepManifest
    tasks_dir: Path
    base_url: str
    model: str
    scrape: _Scraper  # one per sweep, so a server without /metrics is named once


@contextmanager
def open_sweep(config: SweepConfig, sweep_dir: Path, *, resume: bool = False,
               resume_command: str = "bankbench sweep --resume") -> Iterator[SweepSession]:
    """Build tasks, bring the server up (or check the given one) and write sweep.json; the
    server is stopped on the way out. `sweep` and `capacity` run their levels inside it."""
    sweep_dir = sweep_dir.resolve()
    if resume:
        manifest: SweepManifest | None = check_resumable(config, sweep_dir)
    else:
        if (sweep_dir / SWEEP_FILE).exists():
            raise SweepError(
                f"{sweep_dir} already holds a sweep; continue it with --resume {sweep_dir}, "
                "or choose another --name"
            )
        manifest = None
    if not config.profile:
        # Fail before anything is built or run: a dead URL would fail every trial slowly.
        _preflight(config, str(config.base_url), str(config.model))
    sweep_dir.mkdir(parents=True, exist_ok=True)

    prepared = prepare_tasks(config, sweep_dir, reuse=resume)
    tasks_dir, n_tasks = prepared.tasks_dir, prepared.n_tasks
    if manifest is not None and manifest.dataset_fallback:  # a resumed sweep says it again
        print(fallback_warning(manifest.dataset_fallback), flush=True)
    too_big = [n for n in config.levels if n > n_tasks * config.attempts]
    if too_big:
        print(
            f"note: levels {too_big} exceed the {n_tasks * config.attempts} trials per level "
            f"({n_tasks} tasks x {config.attempts} attempts); raise --attempts to load them fully",
            flush=True,
        )

    server = None
    try:
        if config.profile:
            from bankbench.serve import api

            port = None
            if manifest is not None:
                # The level jobs hold the first run's URL in their Harbor config: the resumed
                # trials must find the server where the killed run had it.
                _stop_leftover_server(sweep_dir / "server")
                port = _reusable_port(manifest.base_url)
            print(f"starting server profile {config.profile} ...", flush=True)
            server = api.up(
                config.profile, router=config.router, workers=config.workers,
                model=config.model, options=dict(config.server_options),
                state_dir=sweep_dir / "server", port=port,
            )
            base_url, model = server.base_url, server.model
            _preflight(config, base_url, model)
            print(f"server ready: {base_url} model {model}", flush=True)
        else:
            base_url, model = str(config.base_url), str(config.model)

        if manifest is None:
            manifest = SweepManifest(
                name=sweep_dir.name, config=config,
                fingerprint=config.fingerprint(), levels=config.levels,
                attempts=config.attempts, server_profile=config.profile, base_url=base_url,
                model=model, router=server.router if server else None,
                tasks_dir=str(tasks_dir), n_tasks=n_tasks, dataset=prepared.dataset,
                dataset_fallback=prepared.fallback,
                versions=versions(server.versions if server else None), git_sha=git_sha(),
                host={"cpus": os.cpu_count(), "platform": platform.platform()},
                started_at=_now(),
                level_records=[
                    LevelRecord(level=n, job_dir=level_dir_name(n),
                                router=server.router if server else None)
                    for n in config.levels
                ],
            )
        else:
            manifest.base_url, manifest.model = base_url, model
        save_manifest(sweep_dir, manifest)
        yield SweepSession(config, sweep_dir, manifest, tasks_dir, base_url, model,
                           _Scraper(base_url))
    except KeyboardInterrupt:
        print(
            f"\nsweep interrupted; finished trials are kept. Continue with:\n"
            f"  {resume_command} {sweep_dir}",
            flush=True,
        )
        raise
    finally:
        if server is not None:
            from bankbench.serve import api

            print("stopping the server this sweep started ...", flush=True)
            api.down(server)


def run_level(session: SweepSession, level: int) -> LevelRecord:
    """Run (skip if complete, continue if partial) one level's Harbor job in the session; a
    level the manifest does not list yet is added to it first."""
    manifest = session.manifest
    record = next((r for r in manifest.level_records if r.level == level), None)
    if record is None:
        record = LevelRecord(level=level, job_dir=level_dir_name(level))
        manifest.level_records.append(record)
        manifest.levels.append(level)
        save_manifest(session.sweep_dir, manifest)
    _run_level(session.config, session.sweep_dir, manifest, record, session.tasks_dir,
               session.base_url, session.model, session.scrape)
    return record


def run_sweep(config: SweepConfig, sweep_dir: Path, *, resume: bool = False) -> Path:
    """Run (or continue) a sweep in `sweep_dir`; returns the path of report.md."""
    with open_sweep(config, sweep_dir, resume=resume) as session:
        for record in list(session.manifest.level_records):
            run_level(session, record.level)
        session.manifest.finished_at = _now()
        save_manifest(session.sweep_dir, session.manifest)

    from analysis.report import write_report

    report = write_report(session.sweep_dir)
    session.manifest.report = str(report)
    save_manifest(session.sweep_dir, session.manifest)
    if session.manifest.dataset_fallback:  # said at the start; said again where one looks last
        print(fallback_warning(session.manifest.dataset_fallback), flush=True)
    return report


def _copy_trace_lines(trace: Path, start: int, out: Path) -> None:
    """The server's request-trace lines written while this level ran (appended, so a resumed
    level keeps the lines of its first part)."""
    with trace.open("rb") as src, out.open("ab") as dst:
        src.seek(start)
        dst.write(src.read())


def _run_level(
    config: SweepConfig, sweep_dir: Path, manifest: SweepManifest, record: LevelRecord,
    tasks_dir: Path, base_url: str, model: str, scrape: _Scraper,
) -> None:
    level = record.level
    job_dir = level_dir(sweep_dir, level)
    state = harbor_job.job_state(job_dir)
    if state is harbor_job.JobState.COMPLETE:
        print(f"level {level}: already complete, skipped", flush=True)
        record.state = "complete"
        save_manifest(sweep_dir, manifest)
        return

    resumed = state is harbor_job.JobState.PARTIAL
    print(f"level {level}: {'resuming' if resumed else 'running'} (-n {level})", flush=True)
    record.state, record.resumed = "running", record.resumed or resumed
    record.started_at = record.started_at or _now()
    save_manifest(sweep_dir, manifest)

    # Scrape after Harbor has created the job folder would be racy; scrape into the sweep dir
    # first and move it in once the job folder exists.
    before = sweep_dir / f".{level_dir_name(level)}-{METRICS_BEFORE}"
    have_before = scrape(before)
    if resumed:
        try:
            harbor_job.wait_for_earlier_harbor(sweep_dir)
        except harbor_job.HarborFailed as exc:
            raise SweepError(f"level {level}: {exc}") from None
    trace = sweep_dir / "server" / REQUEST_TRACE_FILE
    trace_from = trace.stat().st_size if trace.is_file() else 0
    if config.sharded:
        from bankbench.sweep import ray_shards, shards

        record.shards = len(shards.concurrencies(level, config.shards))
        runner = ray_shards.run_level if config.ray else shards.run_level
        failed = runner(config, sweep_dir, level, tasks_dir, base_url, model)
    else:
        failed = _run_one_job(config, sweep_dir, level, job_dir, tasks_dir, base_url, model,
                              resumed)
    have_after = scrape(job_dir / METRICS_AFTER) if job_dir.exists() else False
    if have_before and job_dir.exists():
        os.replace(before, job_dir / METRICS_BEFORE)
    record.metrics = have_before and have_after
    if trace.is_file() and job_dir.exists():
        _copy_trace_lines(trace, trace_from, job_dir / REQUEST_TRACE_FILE)
    record.state = harbor_job.job_state(job_dir).value if not failed else "failed"
    record.finished_at = _now()
    save_manifest(sweep_dir, manifest)
    if failed:
        raise SweepError(f"level {level}: " + "\n".join(failed)
                         + "\nfinished trials are kept; --resume runs the rest")


def _run_one_job(config: SweepConfig, sweep_dir: Path, level: int, job_dir: Path,
                 tasks_dir: Path, base_url: str, model: str, resumed: bool) -> list[str]:
    """The level as one Harbor job; [] or the one line saying why Harbor failed."""
    if resumed:
        quarantine = sweep_dir / "quarantine" / level_dir_name(level)
        for moved, why in harbor_job.quarantine_unfinished_trials(job_dir, quarantine):
            print(f"  {moved.name}: {why}; moved to {quarantine}, its trial runs again",
                  flush=True)
        cmd = harbor_job.resume_command(job_dir)
    else:
        cmd = harbor_job.harbor_run_argv(
            config, tasks_dir=tasks_dir, sweep_dir=sweep_dir, job_name=level_dir_name(level),
            level=level, base_url=base_url, model=model,
        )
    log_path = sweep_dir / "logs" / f"{level_dir_name(level)}.harbor.log"
    try:
        harbor_job.run_job(
            cmd, log_path=log_path, job_dir=job_dir,
            progress=lambda d: progress.line(level, d),
        )
    except harbor_job.HarborFailed as exc:
        return [str(exc)]
    return []
