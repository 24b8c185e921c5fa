"""Local Dynamo stacks (frontend + worker processes) on loopback with file discovery.

`LocalProfile` is the base of the cpu-mocker and cpu-tiny profiles: build the environment that
keeps every Dynamo plane on 127.0.0.1, start each component in its own process group, wait
until the model is listed, every worker registered and a 1-token completion works; on any
failure stop everything that was started and raise ServeError with the failing component's
log tail. `wait_ready` also serves the container profiles (they pass their own failure check).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import httpx
from pydantic import BaseModel

from bankbench import procs
from bankbench.serve.base import COMPONENT_ROUTERS, ComponentStatus, StartRequest
from bankbench.serve.errors import ServeError
from bankbench.serve.options import validate_options
from bankbench.serve.state import Component, ServerState, save_state

FailureCheck = Callable[[ServerState], ServeError | None]


def dynamo_env(kv_dir: Path) -> dict[str, str]:
    """Environment for every component of one stack: file discovery in `kv_dir`, loopback only.

    Without the *_HOST variables Dynamo advertises a non-loopback address.
    """
    env = dict(os.environ)
    for var in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME"):
        env.pop(var, None)
    env.update(
        DYN_DISCOVERY_BACKEND="file",
        DYN_FILE_KV=str(kv_dir),
        DYN_REQUEST_PLANE="tcp",
        DYN_EVENT_PLANE="zmq",
        DYN_TCP_RPC_HOST="127.0.0.1",
        DYN_TCP_RESPONSE_STREAM_HOST="127.0.0.1",
        DYN_EVENT_PLANE_HOST="127.0.0.1",
        DYN_SYSTEM_HOST="127.0.0.1",
        DYN_HTTP_RPC_HOST="127.0.0.1",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        PYTHONUNBUFFERED="1",
        NO_COLOR="1",  # plain log files
        DYN_SDK_DISABLE_ANSI_LOGGING="1",
    )
    return env


def frontend_command(
    python: Path, port: int, router: str, affinity_ttl: int | None, extra: list[str]
) -> list[str]:
    cmd = [
        str(python), "-m", "dynamo.frontend",
        "--http-host", "127.0.0.1", "--http-port", str(port),
        "--router-mode", router,
    ]
    if affinity_ttl is not None:
        cmd += ["--router-session-affinity-ttl-secs", str(affinity_ttl)]
    return cmd + list(extra)


def launch(
    state: ServerState,
    commands: list[tuple[str, list[str]]],
    env: dict[str, str],
    expected_workers: int,
    timeout_s: float,
) -> ServerState:
    """Start `commands` (name, argv) in order, then wait for readiness; clean up on failure."""
    assert state.state_dir is not None
    logs = state.state_dir / "logs"
    try:
        for name, cmd in commands:
            log = logs / f"{name}.log"
            log.write_text("") if log.exists() else None
            pid = procs.start(cmd, env, log)
            state.components.append(
                Component(name=name, kind="process", pid=pid, log_path=log, command=cmd,
                          start_time=procs.start_time(pid))
            )
            save_state(state)  # so `serve down` can stop a half-started stack
        wait_ready(state, expected_workers, timeout_s)
    except BaseException:
        stop_processes(state)
        raise
    return state


def stop_processes(state: ServerState) -> None:
    """Stop every process component, workers first so the frontend sees them leave."""
    for comp in reversed(state.components):
        if comp.kind == "process" and comp.pid is not None:
            procs.stop_group(comp.pid, started=comp.start_time)


def process_status(state: ServerState) -> list[ComponentStatus]:
    """Liveness of the process components: the recorded leader (not a later holder of its pid)
    with its group still running."""
    return [
        ComponentStatus(
            name=c.name, pid=c.pid,
            alive=(c.pid is not None and procs.is_same_process(c.pid, c.start_time)
                   and procs.group_alive(c.pid)))
        for c in state.components if c.kind == "process"
    ]


def process_failure(state: ServerState) -> ServeError | None:
    """ServeError for the first process component that has exited, else None."""
    for comp in state.components:
        if comp.kind == "process" and comp.pid is not None and not procs.is_alive(comp.pid):
            code = procs.exit_code(comp.pid)
            how = f"exit code {code}" if code is not None else "it is gone"
            last = procs.tail(comp.log_path, 1).strip() or "no output"
            return ServeError(
                f"{state.profile}: {comp.name} exited during start ({how}): {last[:200]}",
                procs.tail(comp.log_path, 25),
                comp.name,
            )
    return None


def registered_workers(root_url: str, client: httpx.Client) -> int | None:
    """Worker instances serving `generate` per the frontend's /health (None if not Dynamo)."""
    try:
        body = client.get(f"{root_url}/health", timeout=5).json()
    except (httpx.HTTPError, ValueError):
        return None
    instances = body.get("instances") if isinstance(body, dict) else None
    if instances is None:
        return None
    # A router component serves `generate` too (as component `thompson`): not a worker.
    return sum(1 for i in instances
               if i.get("endpoint") == "generate" and i.get("component") not in COMPONENT_ROUTERS)


def probe_completion(base_url: str, model: str, client: httpx.Client) -> str | None:
    """None when a 1-token chat completion succeeds, else a short reason."""
    try:
        resp = client.post(
            f"{base_url}/chat/completions",
            json={
                "model": model,
                "messages": [{"role": "user", "content": "ping"}],
                "max_tokens": 1,
            },
            timeout=30,
        )
    except httpx.HTTPError as exc:
        return f"{type(exc).__name__}: {exc}"
    if resp.status_code != 200:
        return f"HTTP {resp.status_code}: {resp.text[:200]}"
    return None


def frontend_tail(state: ServerState) -> tuple[str, str | None]:
    """(last lines of the frontend's log, its name) for a timeout error."""
    frontend = state.components[0] if state.components else None
    return (procs.tail(frontend.log_path if frontend else None, 25),
            frontend.name if frontend else None)


def wait_ready(state: ServerState, expected_workers: int, timeout_s: float,
               failure: FailureCheck = process_failure,
               tails: Callable[[ServerState], tuple[str, str | None]] = frontend_tail) -> None:
    """Block until the stack answers: model listed, workers registered, 1 token generated.
    `failure` names a component that died meanwhile (raised at once); `tails` gives the log
    lines a timeout error shows."""
    root = state.base_url.removesuffix("/v1")
    deadline = time.monotonic() + timeout_s
    last = "frontend not answering yet"
    with httpx.Client() as client:
        while True:
            dead = failure(state)
            if dead is not None:
                raise dead
            if time.monotonic() > deadline:
                text, whose = tails(state)
                raise ServeError(
                    f"{state.profile}: not ready after {timeout_s:.0f} s ({last})", text, whose)
            try:
                ids = [m["id"] for m in client.get(f"{state.base_url}/models", timeout=5)
                       .json().get("data", [])]
            except (httpx.HTTPError, ValueError, KeyError, TypeError):
                ids = None
            if ids is None:
                last = "frontend not answering yet"
            elif state.model not in ids:
                last = f"model {state.model!r} not listed yet (listed: {ids})"
            else:
                n = registered_workers(root, client)
                if n is not None and n < expected_workers:
                    last = f"{n}/{expected_workers} workers registered"
                else:
                    reason = probe_completion(state.base_url, state.model, client)
                    if reason is None:
                        return
                    last = f"test completion failed: {reason}"
            time.sleep(0.3)


PORT_TRIES = 3


def port_taken(exc: ServeError) -> bool:
    """Whether a start failed because a component found its port taken."""
    text = f"{exc.cause}\n{exc.log_tail}".lower()
    return "already in use" in text or "address in use" in text


def check_port(port: int | None) -> int:
    """The frontend port to use: `port` if free on loopback, a free one when None."""
    if port is None:
        return procs.free_port()
    if not (0 < port < 65536):
        raise ServeError(f"--port {port} is not a TCP port")
    if not procs.port_is_free(port):
        raise ServeError(f"port {port} is busy on 127.0.0.1; choose another --port or omit it")
    return port


class LocalProfile:
    """A Dynamo stack of local process groups; `launch(state, port, opts)` starts its
    components into `state` (each CPU profile module passes its own)."""

    launches = True

    def __init__(self, name: str, summary: str, options_model: type[BaseModel],
                 default_model: str,
                 launch: Callable[[ServerState, int, BaseModel], ServerState],
                 component_routers: tuple[str, ...] = ()) -> None:
        self.name = name
        self.component_routers = component_routers
        self.summary = summary
        self.options_model = options_model
        self.default_model = default_model
        self.launch = launch

    def check(self, req: StartRequest) -> None:
        if req.router in COMPONENT_ROUTERS and req.router not in self.component_routers:
            raise ServeError(f"--router {req.router} is not available on {self.name} "
                             f"(it is on: cpu-mocker)")
        validate_options(self.options_model, req.options, self.name)

    def start(self, req: StartRequest, state_dir: Path) -> ServerState:
        from bankbench.serve.dynamo_venv import DynamoVenvError
        from bankbench.serve.smollm2 import ModelFilesError

        opts = validate_options(self.options_model, req.options, self.name)
        for attempt in range(1, PORT_TRIES + 1):
            port = check_port(req.port)
            state = ServerState(
                profile=self.name, base_url=f"http://127.0.0.1:{port}/v1",
                model=req.model or self.default_model, router=req.router or "round-robin",
                workers=req.workers or 1, state_dir=state_dir,
                options=opts.model_dump(mode="json"),
            )
            try:
                return self.launch(state, port, opts)
            except (DynamoVenvError, ModelFilesError) as exc:
                raise ServeError(f"{self.name}: {str(exc).splitlines()[0]}") from None
            except ServeError as exc:
                # A port picked free can be taken before the frontend binds it (another
                # program's pick in between; test runs and shards start stacks side by side):
                # the launch cleaned up, so pick again. A port the user named is theirs.
                if req.port is not None or attempt == PORT_TRIES or not port_taken(exc):
                    raise
        raise AssertionError("unreachable")

    def dry_run(self, req: StartRequest, state_dir: Path) -> str:
        raise ServeError(f"--dry-run prints container commands; {self.name} starts local "
                         "processes (their exact command lines are in state.json after `up`)")

    def stop(self, state: ServerState) -> None:
        stop_processes(state)

    def alive(self, state: ServerState) -> list[ComponentStatus]:
        return process_status(state)
