"""Profile cpu-mocker: the real Dynamo frontend + the Dynamo mocker engine, on loopback."""

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


def start(state: ServerState, port: int, opts: MockerOptions) -> ServerState:
    from bankbench.serve.dynamo_venv import ensure_dynamo_venv, installed_versions
    from bankbench.serve.smollm2 import model_dir

    python = ensure_dynamo_venv()
    state.versions = installed_versions(python)
    model_path = opts.model_path or model_dir()
    assert state.state_dir is not None
    env = dynamo_env(state.state_dir / "discovery")
    if opts.request_trace:
        # Dynamo 1.6.1 needs a file path here: a directory silently disables the sink.
        env.update(DYN_REQUEST_TRACE="1", DYN_REQUEST_TRACE_SINKS="jsonl",
                   DYN_REQUEST_TRACE_OUTPUT_PATH=str(state.state_dir / REQUEST_TRACE_FILE))
    commands = [
        ("frontend", frontend_command(
            python, port, state.router, opts.router_session_affinity_ttl_secs, opts.frontend_args
        )),
        ("mocker", mocker_command(python, model_path, state.model, state.workers, opts)),
    ]
    return launch(state, commands, env, state.workers, opts.start_timeout_s)


PROFILE = LocalProfile("cpu-mocker", "Dynamo frontend + mocker engine, any machine",
                       MockerOptions, DEFAULT_MODEL, start)
