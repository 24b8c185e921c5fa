"""Helpers for LocalEnvironment tests: a tiny task environment, process and file waits."""

from __future__ import annotations

import os
import time
from pathlib import Path

DOCKERFILE = "FROM python:3.12-slim\nCOPY . /app\nRUN chmod +x /app/hello\nWORKDIR /app\n"
HELLO = '#!/usr/bin/env python3\nimport sys\nprint("hello", sys.argv[1:])\n'
IS_ROOT = os.geteuid() == 0


def write_environment_dir(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "Dockerfile").write_text(DOCKERFILE)
    (path / "hello").write_text(HELLO)
    (path / "hello").chmod(0o755)
    (path / "data").mkdir()
    (path / "data" / "table.csv").write_text("a,b\n1,2\n")
    return path


def process_gone(pid: int, within_sec: float = 5.0) -> bool:
    """True once `pid` no longer runs (a zombie counts as gone: it runs nothing)."""
    deadline = time.monotonic() + within_sec
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


def running_with_argv(cmdline: bytes) -> list[int]:
    """Host pids of live processes whose command line is exactly `cmdline` (NUL-separated)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "cmdline").read_bytes() == cmdline and not process_gone(
                        int(entry.name), within_sec=0):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def gone_within(processes, within_sec: float = 5.0) -> bool:
    """True once `processes()` (a trial's process list) holds no live process."""
    deadline = time.monotonic() + within_sec
    while time.monotonic() < deadline:
        if all(process_gone(pid, within_sec=0) for pid in processes()):
            return True
        time.sleep(0.05)
    return False


def read_pid(root: Path, path: str, within_sec: float = 10.0) -> int:
    """Wait for a command inside the root to write its pid file, then read it."""
    host_file = root / path.lstrip("/")
    deadline = time.monotonic() + within_sec
    while time.monotonic() < deadline:
        text = host_file.read_text().strip() if host_file.exists() else ""
        if text:
            return int(text)
        time.sleep(0.05)
    raise AssertionError(f"{path} never appeared in {root}")


def holder_pids(state_dir: Path) -> list[int]:
    """The process running this trial's init (its namespace holder).

    A child the script forks shows the same command line until it execs; those are
    left out by keeping only candidates whose parent is not a candidate.
    """
    needle = str(state_dir / "init.json").encode()
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if needle in (entry / "cmdline").read_bytes().split(b"\0"):
                    stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                    parents[int(entry.name)] = int(stat[1])
            except OSError:
                continue
    return [pid for pid, parent in parents.items() if parent not in parents]
