"""The cpu-tiny stack (Dynamo frontend, the llama.cpp worker, SmolLM2-135M) for a test module,
and one chat completion against it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from bankbench.procs import group_alive
from bankbench.serve import api, llamacpp
from bankbench.serve.errors import ServeError
from bankbench.serve.state import ServerState

SLOTS = 4  # the worker's default --parallel


@contextmanager
def cpu_tiny_stack(state_dir: Path) -> Iterator[ServerState]:
    """Up for the block, then down with every process of it gone (skips the test where the
    xllamacpp wheel cannot be installed)."""
    try:
        state = api.up("cpu-tiny", state_dir=state_dir)
    except ServeError as exc:
        if exc.component == llamacpp.COMPONENT:
            pytest.skip(f"the xllamacpp wheel cannot be installed here: {exc.cause}")
        raise
    yield state
    api.down(state)
    deadline = time.monotonic() + 30
    pids = [c.pid for c in state.components if c.pid is not None]
    while any(group_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(group_alive(p) for p in pids), "cpu-tiny processes left behind"


def chat(stack: ServerState, **body) -> dict:
    body = {"model": stack.model, **body}
    r = httpx.post(f"{stack.base_url}/chat/completions", json=body, timeout=120)
    assert r.status_code == 200, r.text
    return r.json()
