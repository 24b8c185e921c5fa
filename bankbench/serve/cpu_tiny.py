"""Profile cpu-tiny: the real Dynamo frontend + a real tiny model through the llama.cpp worker.

The worker program (dynamo/workers/llamacpp_worker.py) and the prebuilt llama.cpp wheel
(`bankbench.serve.llamacpp.ensure_xllamacpp`) belong to the llama.cpp side; this module only
wires them into a stack like cpu-mocker's. Each worker logs llama.cpp's own timings per request
into the state folder; when the stack stops, the engine speed they show is printed and kept
(`bankbench.serve.engine_speed`).
"""

from __future__ import annotations

import sys
from pathlib import Path

from bankbench.paths import cache_dir, dynamo_assets
from bankbench.serve.engine_speed import SPEED_FILE, TIMINGS_FILE, summarise_stack
from bankbench.serve.errors import ServeError
from bankbench.serve.local_stack import LocalProfile, dynamo_env, frontend_command, launch
from bankbench.serve.options import TinyOptions
from bankbench.serve.state import ServerState

DEFAULT_MODEL = "SmolLM2-135M-Instruct"


def prompt_cache_dir() -> Path:
    """Where the worker keeps long prompts' KV across starts (`prompt_cache=true`)."""
    return cache_dir() / "llamacpp-prompts"


def worker_script() -> Path:
    return dynamo_assets() / "workers" / "llamacpp_worker.py"


def worker_command(
    python: Path, gguf: Path, model_path: Path, model: str, opts: TinyOptions,
    timings: Path | None = None,
) -> list[str]:
    cmd = [
        str(python), str(worker_script()),
        "--model-path", str(gguf),
        "--model-name", model,
        "--tokenizer-path", str(model_path),
    ]
    if timings is not None:
        cmd += ["--timings-log", str(timings)]
    if opts.tool_call_parser:
        cmd += ["--dyn-tool-call-parser", opts.tool_call_parser]
    if opts.parallel is not None:
        cmd += ["--parallel", str(opts.parallel)]
    if opts.prompt_cache:
        cmd += ["--prompt-cache-dir", str(prompt_cache_dir())]
    return cmd + list(opts.worker_args)


def start(state: ServerState, port: int, opts: TinyOptions) -> ServerState:
    from bankbench.serve.dynamo_venv import ensure_dynamo_venv, installed_versions
    from bankbench.serve.smollm2 import gguf_path, model_dir

    if not worker_script().exists():
        raise ServeError(f"cpu-tiny: the llama.cpp worker {worker_script()} is missing")
    from bankbench.serve.llamacpp import ensure_xllamacpp

    gguf = opts.gguf or gguf_path()
    if not Path(gguf).is_file():
        raise ServeError(f"cpu-tiny: GGUF file {gguf} not found")
    python = ensure_dynamo_venv()
    model_path = opts.model_path or model_dir()
    ensure_xllamacpp(python)
    state.versions = installed_versions(python, ("ai-dynamo", "xllamacpp"))
    assert state.state_dir is not None
    env = dynamo_env(state.state_dir / "discovery")
    # The engine speed stated at stop is this stack's: an earlier one's files go.
    for old in [state.state_dir / SPEED_FILE,
                *state.state_dir.glob(TIMINGS_FILE.format(index="*"))]:
        old.unlink(missing_ok=True)
    commands = [
        ("frontend", frontend_command(
            python, port, state.router, opts.router_session_affinity_ttl_secs, opts.frontend_args
        )),
    ]
    for i in range(state.workers):
        timings = state.state_dir / TIMINGS_FILE.format(index=i)
        worker = worker_command(python, gguf, model_path, state.model, opts, timings)
        commands.append((f"worker-{i}", worker))
    return launch(state, commands, env, state.workers, opts.start_timeout_s)


class TinyProfile(LocalProfile):
    def stop(self, state: ServerState) -> None:
        super().stop(state)
        line = summarise_stack(state.state_dir) if state.state_dir is not None else None
        if line:
            print(f"bankbench: {line}", file=sys.stderr, flush=True)


PROFILE = TinyProfile("cpu-tiny", "Dynamo frontend + SmolLM2-135M via llama.cpp",
                      TinyOptions, DEFAULT_MODEL, start)
