"""Public Python API of `bankbench serve`: up, down, status, load_state.

    state = up("cpu-mocker", workers=2, options={"speedup_ratio": 1000})
    …  # OpenAI-compatible requests to state.base_url with model=state.model
    down(state)

`up` returns only when the stack answers (model listed, workers registered, a 1-token completion
works). On failure it raises ServeError (one-line `cause`, plus the failing component's log
tail) and leaves nothing running.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from pydantic import BaseModel, Field

from bankbench.serve import profiles
from bankbench.serve.base import (
    ROUTERS,
    ComponentStatus,
    StackProfile,
    StartRequest,
    is_gone,
)
from bankbench.serve.errors import ServeError
from bankbench.serve.local_stack import registered_workers
from bankbench.serve.state import (
    STATE_FILE,
    ServerState,
    default_state_dir,
    known_state_dirs,
    save_state,
)
from bankbench.serve.state import load_state as _load_state

PROFILES = tuple(profiles.REGISTRY)

__all__ = ["PROFILES", "ServeError", "ServerState", "StatusReport", "check", "down",
           "dry_run", "load_state", "recorded_stacks", "running", "status", "up"]


class StatusReport(BaseModel):
    """What `status` found: is the server answering, which models, which components live."""

    base_url: str
    ok: bool = Field(
        default=False, description="answers /v1/models and every recorded component is alive"
    )
    models: list[str] = Field(default_factory=list)
    workers_registered: int | None = Field(default=None, description="Dynamo /health only")
    components: list[ComponentStatus] = Field(default_factory=list)
    detail: str = ""


def load_state(state_dir: Path) -> ServerState:
    """The state `up` wrote in `state_dir` (FileNotFoundError when nothing is recorded)."""
    return _load_state(state_dir)


def _component_status(state: ServerState) -> list[ComponentStatus]:
    try:
        return profiles.get(state.profile).alive(state)
    except ServeError:  # a state file from a profile this version does not know
        return []


def _prepare_state_dir(state_dir: Path) -> None:
    if (state_dir / STATE_FILE).exists():
        old = _load_state(state_dir)
        if any(c.alive is not False for c in _component_status(old)):
            raise ServeError(
                f"a {old.profile} stack is already running from {state_dir}; "
                "stop it with `bankbench serve down` or pass another --state-dir"
            )
        (state_dir / STATE_FILE).unlink()
    shutil.rmtree(state_dir / "discovery", ignore_errors=True)
    shutil.rmtree(state_dir / "logs", ignore_errors=True)
    (state_dir / "logs").mkdir(parents=True, exist_ok=True)


def check(
    profile: str,
    *,
    router: str | None = None,
    workers: int | None = None,
    model: str | None = None,
    options: dict | None = None,
) -> None:
    """Raise ServeError if `up` would refuse these arguments; starts and contacts nothing.

    Callers that announce a start (the CLI) call this first, so a bad profile name or option
    value is the only thing the user sees.
    """
    prof = profiles.get(profile)
    if router is not None and router not in ROUTERS:
        raise ServeError(f"unknown router {router!r} (known: {', '.join(ROUTERS)})")
    if workers is not None and workers < 1:
        raise ServeError(f"--workers must be at least 1, got {workers}")
    prof.check(StartRequest(router=router, workers=workers, model=model,
                            options=options or {}))


def _request(profile: str, router: str | None, workers: int | None, port: int | None,
             model: str | None, options: dict | None,
             state_dir: Path | None) -> tuple[StackProfile, StartRequest, Path]:
    check(profile, router=router, workers=workers, model=model, options=options)
    req = StartRequest(router=router, workers=workers, port=port, model=model,
                       options=options or {})
    return (profiles.get(profile), req,
            Path(state_dir or default_state_dir(profile)).resolve())


def up(
    profile: str,
    *,
    router: str | None = None,
    workers: int | None = None,
    port: int | None = None,
    model: str | None = None,
    options: dict | None = None,
    state_dir: Path | None = None,
) -> ServerState:
    """Start `profile` and return its state once it answers; see the module docstring.

    `router` and `workers` left as None take the profile's defaults (round-robin and 1 on the
    CPU profiles, the YAML values on the GPU ones).
    """
    prof, req, state_dir = _request(profile, router, workers, port, model, options, state_dir)
    if prof.launches:
        _prepare_state_dir(state_dir)
    state = prof.start(req, state_dir)
    save_state(state)
    return state


def dry_run(
    profile: str,
    *,
    router: str | None = None,
    workers: int | None = None,
    port: int | None = None,
    model: str | None = None,
    options: dict | None = None,
    state_dir: Path | None = None,
) -> str:
    """What `up` would start, as pasteable shell text; starts nothing, writes nothing."""
    prof, req, state_dir = _request(profile, router, workers, port, model, options, state_dir)
    return prof.dry_run(req, state_dir)


@contextmanager
def running(profile: str, **kwargs) -> Iterator[ServerState]:
    """`with running("cpu-mocker", workers=2) as state: …` — `up`, then `down` on exit."""
    state = up(profile, **kwargs)
    try:
        yield state
    finally:
        down(state)


def down(state: ServerState) -> None:
    """Stop exactly what `up` started (process groups by pid, containers by id)."""
    prof = profiles.get(state.profile)
    prof.stop(state)
    if state.state_dir is not None:
        shutil.rmtree(state.state_dir / "discovery", ignore_errors=True)
        (state.state_dir / STATE_FILE).unlink(missing_ok=True)
    still = [c.name for c in prof.alive(state) if c.alive]
    if still:
        raise ServeError(f"could not stop: {', '.join(still)}")


def recorded_stacks(prune: bool = True) -> tuple[list[Path], list[ServerState]]:
    """State dirs of the recorded stacks that may still run, and the stacks found gone.

    A stack whose every component has ended (killed, crashed, a test's leftover) is gone:
    with `prune` its record is removed as `down` would (logs stay), so it never makes
    `serve down`/`status` ask which stack was meant.
    """
    live: list[Path] = []
    gone: list[ServerState] = []
    for state_dir in known_state_dirs():
        try:
            state = _load_state(state_dir)
        except (FileNotFoundError, ValueError):
            continue
        if not is_gone(_component_status(state)):
            live.append(state_dir)
            continue
        gone.append(state)
        if prune:
            shutil.rmtree(state_dir / "discovery", ignore_errors=True)
            (state_dir / STATE_FILE).unlink(missing_ok=True)
    return live, gone


def status(state_or_url: ServerState | str, api_key_env: str | None = None) -> StatusReport:
    """Check a stack we started (components + HTTP) or any OpenAI-compatible base URL."""
    state = state_or_url if isinstance(state_or_url, ServerState) else None
    base_url = state.base_url if state else str(state_or_url).rstrip("/")
    if not base_url.endswith("/v1"):
        base_url += "/v1"
    key_env = api_key_env or (state.options.get("api_key_env") if state else None)
    headers = {}
    if key_env and os.environ.get(key_env):
        headers["Authorization"] = f"Bearer {os.environ[key_env]}"
    components = _component_status(state) if state else []
    report = StatusReport(base_url=base_url, components=components)
    with httpx.Client(headers=headers) as client:
        try:
            resp = client.get(f"{base_url}/models", timeout=10)
            resp.raise_for_status()
            report.models = [m["id"] for m in resp.json().get("data", [])]
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
            report.detail = f"{base_url}/models did not answer: {type(exc).__name__}: {exc}"
            return report
        report.workers_registered = registered_workers(base_url.removesuffix("/v1"), client)
    dead = [c.name for c in components if not c.alive]  # None (cannot tell) is not OK
    report.ok = not dead
    report.detail = f"components not running: {', '.join(dead)}" if dead else "ok"
    return report
