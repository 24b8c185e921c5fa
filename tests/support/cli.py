"""Small helpers for tests that run the CLI: the CLI as a user runs it, closed ports, and
finding processes a test started (by a path only that test uses) among everyone else's."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

HARBOR_ENV = {"HARBOR_TELEMETRY": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def bankbench(*args: str, env: dict[str, str] | None = None, timeout: float = 120,
              cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bankbench", *args], capture_output=True, text=True,
        timeout=timeout, env={**os.environ, **HARBOR_ENV, **(env or {})}, cwd=cwd,
    )


def bankbench_here(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """`bankbench ARGS` run in this process: its exit code, stdout and stderr as `bankbench`
    gives them, without a Python start-up and the CLI's imports (0.6-3 CPU-s a call). For
    tests of what a command says and writes; what only a process shows (a traceback printed,
    signals, the real exit) keeps `bankbench` above."""
    from bankbench.cli import main

    out, err = io.StringIO(), io.StringIO()
    # A sweep or capacity command installs its stop handlers (bankbench.sweep.stop); left in
    # place they would change how this process and the children of later tests take SIGINT.
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    with (contextlib.redirect_stdout(out), contextlib.redirect_stderr(err),
          contextlib.chdir(cwd) if cwd is not None else contextlib.nullcontext()):
        try:
            code = main(list(args))
        except SystemExit as stop:  # argparse, and `raise SystemExit("message")`
            code = stop.code
            if isinstance(code, str):
                print(code, file=sys.stderr)
                code = 1
            code = code or 0
        finally:
            for sig, handler in handlers.items():
                signal.signal(sig, handler)
    return subprocess.CompletedProcess(["bankbench", *args], code, out.getvalue(),
                                       err.getvalue())


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def error_lines(stderr: str) -> list[str]:
    """The lines that carry the error, without argparse's usage block."""
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    return [ln for ln in lines if not ln.startswith(("usage:", " "))]


def assert_one_line_error(done: subprocess.CompletedProcess, *culprits: str) -> str:
    """Non-zero exit, no traceback, exactly one error line, and it names every culprit."""
    assert done.returncode != 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    lines = error_lines(done.stderr)
    assert len(lines) == 1, done.stderr
    for culprit in culprits:
        assert culprit in lines[0], lines[0]
    return lines[0]


def processes_mentioning(marker: str) -> list[str]:
    """`pid cmdline` of live processes whose command line or environment holds `marker`
    (a tmp path unique to one test), so other people's servers are never counted."""
    found = []
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            environ = (entry / "environ").read_bytes().decode(errors="replace")
            state = (entry / "stat").read_text().split(") ", 1)[1][:1]
        except OSError:
            continue
        if state == "Z":  # a zombie holds nothing; its parent has merely not reaped it yet
            continue
        if marker in cmdline or marker in environ:
            found.append(f"{entry.name} {cmdline.strip()}")
    return found


def wait_for(condition, proc: subprocess.Popen, log: Path, timeout: float = 300) -> None:
    """Poll `condition` until it holds; fail with the tail of the sweep's log if the process
    ends first or `timeout` seconds pass (then the process is killed)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if proc.poll() is not None:
            pytest.fail(f"sweep ended early ({proc.returncode}):\n{log.read_text()[-3000:]}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"condition not met in {timeout} s:\n{log.read_text()[-3000:]}")
        time.sleep(0.2)
