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

from bankbench.serve import procs
from bankbench.serve.dynamo_venv import DynamoVenvError
from bankbench.serve.errors import ServeError
from bankbench.serve.local_stack import ROUTER_MODES, registered_workers, stop_processes
from bankbench.serve.options import MockerOptions, TinyOptions, validate_options
from bankbench.serve.smollm2 import ModelFilesError
from bankbench.serve.state import (
    STATE_FILE,
    ServerState,
    default_state_dir,
    save_state,
)
from bankbench.serve.state import load_state as _load_state

LOCAL_PROFILES = ("cpu-mocker", "cpu-tiny")
GPU_PROFILES = ("gpu-sglang", "gpu-vllm", "gpu-sglang-disagg")
PROFILES = (*LOCAL_PROFILES, *GPU_PROFILES, "external")

__all__ = ["PROFILES", "ServeError", "ServerState", "StatusReport", "check", "down",
           "load_state", "running", "status", "up"]


class ComponentStatus(BaseModel):
    name: str
    alive: bool
    pid: int | None = None
    container_id: str | None = None


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


def _check_port(port: int | None) -> int:
    if port is None:
        return procs.free_port()
    if not (0 < port < 65536):
        raise ServeError(f"--port {port} is not a TCP port")
    if not procs.port_is_free(port):
        raise ServeError(f"port {port} is busy on 127.0.0.1; choose another --port or omit it")
    return port


def _prepare_state_dir(state_dir: Path, profile: str) -> None:
    if (state_dir / STATE_FILE).exists():
        old = _load_state(state_dir)
        if any(c.alive for c in _component_status(old)):
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
    if profile not in PROFILES:
        raise ServeError(f"unknown profile {profile!r} (known: {', '.join(PROFILES)})")
    if router is not None and router not in ROUTER_MODES:
        raise ServeError(f"unknown router {router!r} (known: {', '.join(ROUTER_MODES)})")
    if workers is not None and workers < 1:
        raise ServeError(f"--workers must be at least 1, got {workers}")
    if profile == "external":
        from bankbench.serve.external import check_options

        check_options(options or {})
    elif profile in GPU_PROFILES:
        from bankbench.serve.gpu import profile_with_overrides

        profile_with_overrides(profile, router=router, workers=workers, port=None, model=model,
                               options=options or {})
    else:
        validate_options(MockerOptions if profile == "cpu-mocker" else TinyOptions, options,
                         profile)


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
    check(profile, router=router, workers=workers, model=model, options=options)
    if profile == "external":
        from bankbench.serve.external import connect

        return connect(model=model, options=options or {}, state_dir=state_dir)
    if profile in GPU_PROFILES:
        from bankbench.serve.gpu import start_gpu

        return start_gpu(profile, router=router, workers=workers, port=port, model=model,
                         options=options or {}, state_dir=state_dir)

    state_dir = Path(state_dir or default_state_dir(profile)).resolve()
    try:
        state = _up_local(profile, router or "round-robin", workers or 1, port, model,
                          options, state_dir)
    except (DynamoVenvError, ModelFilesError) as exc:
        raise ServeError(f"{profile}: {str(exc).splitlines()[0]}") from None
    save_state(state)
    return state


def _up_local(profile: str, router: str, workers: int, port: int | None, model: str | None,
              options: dict | None, state_dir: Path) -> ServerState:
    if profile == "cpu-mocker":
        from bankbench.serve import cpu_mocker

        mopts = validate_options(MockerOptions, options, profile)
        port = _check_port(port)
        _prepare_state_dir(state_dir, profile)
        state = ServerState(
            profile=profile, base_url=f"http://127.0.0.1:{port}/v1",
            model=model or cpu_mocker.DEFAULT_MODEL, router=router, workers=workers,
            state_dir=state_dir, options=mopts.model_dump(mode="json"),
        )
        cpu_mocker.start(state, port, mopts)
    else:
        from bankbench.serve import cpu_tiny

        topts = validate_options(TinyOptions, options, profile)
        port = _check_port(port)
        _prepare_state_dir(state_dir, profile)
        state = ServerState(
            profile=profile, base_url=f"http://127.0.0.1:{port}/v1",
            model=model or cpu_tiny.DEFAULT_MODEL, router=router, workers=workers,
            state_dir=state_dir, options=topts.model_dump(mode="json"),
        )
        cpu_tiny.start(state, port, topts)
    return state


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
    stop_processes(state)
    containers = [c for c in state.components if c.kind == "container"]
    if containers:
        from bankbench.serve.gpu import stop_containers

        stop_containers(state)
    if state.state_dir is not None:
        shutil.rmtree(state.state_dir / "discovery", ignore_errors=True)
        (state.state_dir / STATE_FILE).unlink(missing_ok=True)
    still = [c.name for c in _component_status(state) if c.alive]
    if still:
        raise ServeError(f"could not stop: {', '.join(still)}")


def _component_status(state: ServerState) -> list[ComponentStatus]:
    out = []
    for c in state.components:
        if c.kind == "process":
            alive = (c.pid is not None and procs.is_same_process(c.pid, c.start_ticks)
                     and procs.group_alive(c.pid))
        else:
            from bankbench.serve.gpu import container_running

            alive = c.container_id is not None and container_running(c.container_id)
        out.append(ComponentStatus(name=c.name, alive=alive, pid=c.pid,
                                   container_id=c.container_id))
    return out


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
    dead = [c.name for c in components if not c.alive]
    report.ok = not dead
    report.detail = f"components not running: {', '.join(dead)}" if dead else "ok"
    return report
