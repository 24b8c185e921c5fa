"""The sweep loop: build tasks, bring a server up (or use one), run one Harbor job per
concurrency level with /metrics scraped around it, record sweep.json, write the report.

Every step is resumable: a level whose Harbor job is complete is skipped, a partial one is
continued with `harbor job resume` (Harbor reruns only unfinished trials), and a changed
configuration is refused.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from bankbench import sweep_neighbours
from bankbench.serve import router_setup
from bankbench.serve.replay import scripted_sweep_config
from bankbench.serve.state import ServerState
from bankbench.sweep import preflight, stop
from bankbench.sweep.level_run import run_level
from bankbench.sweep.manifest import (
    check_resumable,
    move_to_new_url,
    point_jobs_at,
    save_manifest,
)
from bankbench.sweep.output_dir import OutputDir, locked_output
from bankbench.sweep.provenance import git_sha, versions
from bankbench.sweep.server_checks import (
    Scraper,
    ServerWatch,
    check_server_or_fail,
    reusable_port,
    stop_leftover_server,
)
from bankbench.sweep.session import SweepSession, now
from bankbench.sweep.tasks import build_or_reuse_tasks, fallback_warning
from contracts.sweep import (
    LevelRecord,
    SweepConfig,
    SweepManifest,
    level_dir_name,
)

if TYPE_CHECKING:
    from agents.options import BankingAgentOptions


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
    agent = preflight.check_options(config)
    if not resume and not config.profile:
        # Fail before anything is created, built or run: a dead URL would fail every trial.
        check_server_or_fail(agent, str(config.base_url), str(config.model))
    with locked_output(sweep_dir, resume=resume, claim=claim) as out:
        with _open_locked(config, agent, out, resume=resume, resume_command=resume_command,
                          port=port) as session:
            yield session


@contextmanager
def _open_locked(config: SweepConfig, agent: BankingAgentOptions, out: OutputDir, *,
                 resume: bool, resume_command: str, port: int | None = None
                 ) -> Iterator[SweepSession]:
    sweep_dir = out.path
    if resume:
        config = scripted_sweep_config(config, sweep_dir)  # scripted when it began: still so
        manifest: SweepManifest | None = check_resumable(config, sweep_dir)
        manifest = move_to_new_url(config, agent, sweep_dir, manifest)
    else:
        manifest = None
        if config.profile is None:
            print(f"server ok: {config.base_url} serves {config.model}", flush=True)
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
            check_server_or_fail(agent, base_url, model)
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
                started_at=now(),
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
        out.keep()
        for warning in sweep_neighbours.announce(base_url, sweep_dir):
            print(warning, flush=True)
        yield SweepSession(config, sweep_dir, manifest, tasks_dir, base_url, model,
                           Scraper(base_url), resume_command,
                           ServerWatch(agent, base_url, model), agent=agent,
                           server_pids=_process_leaders(server))
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


def run_sweep(config: SweepConfig, sweep_dir: Path, *, resume: bool = False,
              claim: bool = False, port: int | None = None, draw: bool = True) -> Path:
    """Run (or continue) a sweep in `sweep_dir`; returns the path of report.md. `claim`: the
    directory name is a default one (a taken name becomes `<name>-2`…); `draw`: the report's
    figures too."""
    with open_sweep(config, sweep_dir, resume=resume, claim=claim, port=port) as session:
        for record in list(session.manifest.level_records):
            run_level(session, record.level)
        stop.check()  # a stop asked for and lost in the last level still stops here
        session.manifest.finished_at = now()
        save_manifest(session.sweep_dir, session.manifest)
        # Still under the sweep's lock: a resume cannot start while the report is written.
        print("writing the report ...", flush=True)
        # Imported here, not before the run: it brings pandas and matplotlib (~2 CPU-s), which
        # a refused, failed or stopped sweep never needs.
        from analysis.report import write_report

        report = write_report(session.sweep_dir, draw=draw)
        session.manifest.report = str(report)
        save_manifest(session.sweep_dir, session.manifest)
    if session.manifest.dataset_fallback:  # said at the start; said again where one looks last
        print(fallback_warning(session.manifest.dataset_fallback), flush=True)
    return report


def _process_leaders(server: ServerState | None) -> list[int] | None:
    """The pids of a launched stack's local processes (None without any: a server the sweep
    did not start, or one of containers, whose CPU the host sampler does not attribute)."""
    if server is None:
        return None
    pids = [c.pid for c in server.components if c.kind == "process" and c.pid]
    return pids or None
