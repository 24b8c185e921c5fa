"""The same sweep once per router: `bankbench sweep --routers round-robin,kv,thompson`.

Each router gets an ordinary sweep in `<sweep>/r-<router>/` (its own server, started for it
and stopped after it, so routers never share warm caches), run one after the other with the
same configuration except the router; `routers.json` at the top records the order and how
far each got. Resuming continues the interrupted router's sweep (which resumes its levels the
way a single sweep does) and then runs the routers not started yet.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from bankbench.sweep.errors import SweepError
from bankbench.sweep.manifest import load_manifest, load_model, save_model
from bankbench.sweep.output_dir import OutputDir, locked_output
from bankbench.sweep.runner import run_sweep
from contracts.sweep import (
    ROUTERS_FILE,
    SWEEP_FILE,
    RouterRun,
    RouterSweepManifest,
    SweepConfig,
    router_dir_name,
)


def load_router_manifest(sweep_dir: Path) -> RouterSweepManifest:
    return load_model(sweep_dir / ROUTERS_FILE, RouterSweepManifest, "multi-router sweep")


def _save(sweep_dir: Path, manifest: RouterSweepManifest) -> None:
    save_model(sweep_dir / ROUTERS_FILE, manifest)


def is_router_sweep(sweep_dir: Path) -> bool:
    return (Path(sweep_dir) / ROUTERS_FILE).exists()


def run_router_sweep(config: SweepConfig, routers: list[str], sweep_dir: Path, *,
                     resume: bool = False, claim: bool = False, draw: bool = True) -> list[Path]:
    """Run (or continue) one sweep per router; returns each router's report.md. The top
    folder is locked while it runs, like a single sweep's (output_dir.py); `draw`: the
    reports' figures too."""
    if not config.profile:
        raise SweepError("--routers needs --profile: each router runs on a stack the sweep "
                         "starts (a --base-url server has one router, chosen where it runs)")
    if len(set(routers)) != len(routers) or not routers:
        raise SweepError(f"--routers must name distinct routers, got {routers}")
    from bankbench.serve.base import ROUTERS

    unknown = [r for r in routers if r not in ROUTERS]
    if unknown:
        raise SweepError(f"unknown router(s) {unknown} (known: {', '.join(ROUTERS)})")
    shared = config.model_copy(update={"router": None})
    with locked_output(sweep_dir, resume=resume, claim=claim) as out:
        return _run_locked(config, shared, routers, out, resume=resume, draw=draw)


def _run_locked(config: SweepConfig, shared: SweepConfig, routers: list[str], out: OutputDir,
                *, resume: bool, draw: bool) -> list[Path]:
    sweep_dir = out.path
    if resume:
        manifest = load_router_manifest(sweep_dir)
        if manifest.fingerprint != shared.fingerprint() or manifest.routers != routers:
            diff = "; ".join(shared.differences(manifest.config)) or (
                f"routers: {manifest.routers} -> {routers}")
            raise SweepError(f"refusing to resume {sweep_dir}: the configuration changed "
                             f"({diff}). Resume with the original options.")
    else:
        manifest = RouterSweepManifest(
            name=sweep_dir.name, routers=routers, config=shared,
            fingerprint=shared.fingerprint(), started_at=datetime.now(UTC),
            runs=[RouterRun(router=r, sweep_dir=router_dir_name(r)) for r in routers])
        _save(sweep_dir, manifest)
        out.keep()

    reports = []
    for run in manifest.runs:
        sub = sweep_dir / run.sweep_dir
        if (sub / SWEEP_FILE).exists():
            earlier = load_manifest(sub)
            if earlier.report and earlier.finished_at:
                print(f"router {run.router}: already complete, skipped", flush=True)
                run.state = "complete"
                _save(sweep_dir, manifest)
                reports.append(Path(earlier.report))
                continue
        print(f"=== router {run.router} ({sub.name}) ===", flush=True)
        run.state = "running"
        _save(sweep_dir, manifest)
        try:
            report = run_sweep(config.model_copy(update={"router": run.router}), sub,
                               resume=(sub / SWEEP_FILE).exists(), draw=draw)
        except SweepError:
            run.state = "failed"
            _save(sweep_dir, manifest)
            raise
        run.state = "complete"
        _save(sweep_dir, manifest)
        reports.append(report)
    manifest.finished_at = datetime.now(UTC)
    _save(sweep_dir, manifest)
    return reports
