"""Profile cpu-mocker: the real Dynamo frontend + the Dynamo mocker engine, on loopback.

With `--router thompson` the stack has a third kind of component: bankbench's router
(`dynamo/routers/thompson_router.py`) between the frontend and one mocker process per worker
(so one worker can be slowed or stopped alone). The workers register in their own Dynamo
namespace and the frontend discovers only the router's namespace, so every request passes
through the router. Its per-request decisions and the frontend's request trace (which maps
the frontend's request id to the client's `x-request-id`) land in `<state_dir>/router/`.
"""

from __future__ import annotations

from pathlib import Path

from bankbench.paths import dynamo_assets
from bankbench.serve.local_stack import LocalProfile, dynamo_env, frontend_command, launch
from bankbench.serve.options import MockerOptions
from bankbench.serve.state import ServerState
from contracts.request_trace import REQUEST_TRACE_FILE

DEFAULT_MODEL = "smollm2-mock"


def mocker_command(
    python: Path, model_path: Path, model: str, workers: int, opts: MockerOptions
) -> list[str]:
    """The mocker launcher's argv (dynamo/launchers/mocker.py sets the model-card parsers)."""
    cmd = [str(python), str(dynamo_assets() / "launchers" / "mocker.py")]
    if opts.tool_call_parser:
        cmd += ["--tool-call-parser", opts.tool_call_parser]
    if opts.reasoning_parser:
        cmd += ["--reasoning-parser", opts.reasoning_parser]
    cmd += [
        "--model-path", str(model_path),
        "--model-name", model,
        "--num-workers", str(workers),
        "--speedup-ratio", str(opts.speedup_ratio),
    ]
    if opts.replay_trace is not None:
        cmd += ["--response-replay-trace-path", str(opts.replay_trace)]
    return cmd + list(opts.mocker_args)


# Namespaces of a thompson stack: the frontend discovers only FRONT_NS (the router's).
FRONT_NS = "bankbench"
WORKER_ENDPOINT = "dyn://bankbench-workers.backend.generate"
ROUTER_ENDPOINT = f"{FRONT_NS}.thompson.generate"
# One pair of files per stack start (a resumed sweep restarts the stack in the same state
# dir, and the earlier run's decisions must still join to its trials).
DECISIONS_FILE = "router/decisions-{stamp}.jsonl"
ROUTER_TRACE_FILE = "router/request_trace-{stamp}.jsonl"


def _stamp(state: ServerState) -> str:
    return state.started_at.strftime("%Y%m%dT%H%M%S%f")


def worker_commands(python: Path, model_path: Path, state: ServerState, opts: MockerOptions,
                    extra: list[str]) -> list[tuple[str, list[str]]]:
    """One mocker process per worker (`worker-<i>`), each with its own speedup ratio."""
    out = []
    for i in range(state.workers):
        ratio = (opts.worker_speedup_ratios[i] if i < len(opts.worker_speedup_ratios)
                 else opts.speedup_ratio)
        one = opts.model_copy(update={"speedup_ratio": ratio})
        out.append((f"worker-{i}",
                    [*mocker_command(python, model_path, state.model, 1, one), *extra]))
    return out


def thompson_commands(python: Path, model_path: Path, state: ServerState, port: int,
                      opts: MockerOptions) -> list[tuple[str, list[str]]]:
    """Frontend, one mocker per worker, then the router (named components, in start order)."""
    assert state.state_dir is not None
    commands = [("frontend", frontend_command(
        python, port, "round-robin", opts.router_session_affinity_ttl_secs,
        [*opts.frontend_args, "--namespace", FRONT_NS]))]
    commands += worker_commands(python, model_path, state, opts, ["--endpoint", WORKER_ENDPOINT])
    router = [
        str(python), str(dynamo_assets() / "routers" / "thompson_router.py"),
        "--model-path", str(model_path), "--model-name", state.model,
        "--worker-endpoint", WORKER_ENDPOINT, "--endpoint", ROUTER_ENDPOINT,
        "--min-workers", str(state.workers),
        "--decisions", str(state.state_dir / DECISIONS_FILE.format(stamp=_stamp(state))),
        "--seed", str(opts.router_seed),
    ]
    if opts.tool_call_parser:
        router += ["--tool-call-parser", opts.tool_call_parser]
    if opts.reasoning_parser:
        router += ["--reasoning-parser", opts.reasoning_parser]
    return [*commands, ("router", router + list(opts.router_args))]


def request_trace_env(path: Path) -> dict[str, str]:
    """The frontend's per-request trace into `path` (one JSON line per request, with
    `x_request_id`). Dynamo 1.6.1 needs a file path: a directory silently disables it."""
    return {"DYN_REQUEST_TRACE": "1", "DYN_REQUEST_TRACE_SINKS": "jsonl",
            "DYN_REQUEST_TRACE_OUTPUT_PATH": str(path)}


def start(state: ServerState, port: int, opts: MockerOptions) -> ServerState:
    from bankbench.serve.dynamo_venv import ensure_dynamo_venv, installed_versions
    from bankbench.serve.smollm2 import model_dir

    python = ensure_dynamo_venv()
    state.versions = installed_versions(python)
    model_path = opts.model_path or model_dir()
    assert state.state_dir is not None
    env = dynamo_env(state.state_dir / "discovery")
    if state.router == "thompson":
        (state.state_dir / "router").mkdir(parents=True, exist_ok=True)
        env.update(request_trace_env(
            state.state_dir / ROUTER_TRACE_FILE.format(stamp=_stamp(state))))
        commands = thompson_commands(python, model_path, state, port, opts)
        return launch(state, commands, env, state.workers, opts.start_timeout_s)
    if opts.request_trace:
        # The sweep copies each level's lines from here into the level's folder.
        env.update(request_trace_env(state.state_dir / REQUEST_TRACE_FILE))
    frontend = ("frontend", frontend_command(
        python, port, state.router, opts.router_session_affinity_ttl_secs, opts.frontend_args))
    if opts.worker_speedup_ratios:  # workers of different speeds: one process each
        commands = [frontend, *worker_commands(python, model_path, state, opts, [])]
    else:
        commands = [frontend,
                    ("mocker", mocker_command(python, model_path, state.model, state.workers,
                                              opts))]
    return launch(state, commands, env, state.workers, opts.start_timeout_s)


PROFILE = LocalProfile("cpu-mocker", "Dynamo frontend + mocker engine, any machine",
                       MockerOptions, DEFAULT_MODEL, start, component_routers=("thompson",))
