"""A serve stack recorded on disk the way `bankbench serve up` records one, without launching
it, and `bankbench serve` run as a user runs it: for the tests of `status` and `down`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bankbench.serve.state import Component, ServerState, save_state


def record_stack(state_dir: Path, pid: int, started: float | None) -> ServerState:
    """A cpu-mocker stack whose frontend is process `pid` (started at `started`), saved."""
    state = ServerState(
        profile="cpu-mocker", base_url="http://127.0.0.1:9/v1", model="m",
        state_dir=state_dir,
        components=[Component(name="frontend", kind="process", pid=pid, start_time=started,
                              log_path=state_dir / "logs" / "frontend.log")])
    (state_dir / "logs").mkdir(parents=True)
    (state_dir / "logs" / "frontend.log").write_text("it crashed\n")
    save_state(state)
    return state


def serve_cli(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bankbench", "serve", *args],
                          capture_output=True, text=True, env=env, timeout=120)
