"""Local processes of a stack: start in their own process group, watch, stop, read logs."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

# Popen handles of children this Python process started, so `stop_group` can reap them
# (a child that is never waited for lingers as a zombie and still "exists").
_children: dict[int, subprocess.Popen] = {}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
        return True


def start(cmd: list[str], env: dict[str, str], log_path: Path, cwd: Path | None = None) -> int:
    """Start `cmd` as leader of a new session (its own process group); output to `log_path`."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        proc = subprocess.Popen(
            cmd,
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    _children[proc.pid] = proc
    return proc.pid


def exit_code(pid: int) -> int | None:
    """Exit status of a child we started once it has ended; None while it runs (or not ours)."""
    proc = _children.get(pid)
    return None if proc is None else proc.poll()


def is_alive(pid: int) -> bool:
    """True while `pid` runs (a zombie counts as ended)."""
    proc = _children.get(pid)
    if proc is not None and proc.poll() is not None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def group_alive(pgid: int) -> bool:
    """True while any non-zombie process is in process group `pgid`."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # fields[0] = state, fields[2] = pgrp
        if fields[2] == str(pgid) and fields[0] != "Z":
            return True
    return False


def start_ticks(pid: int) -> int | None:
    """The process's start time (clock ticks since boot): tells a pid from a later reuse."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return int(fh.read().rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def is_same_process(pid: int, ticks: int | None) -> bool:
    """False when `pid` now names a different process than the one started at `ticks`."""
    if ticks is None:
        return True
    now = start_ticks(pid)
    return now is None or now == ticks


def stop_group(pgid: int, timeout: float = 10.0, ticks: int | None = None) -> None:
    """SIGTERM the process group, SIGKILL it after `timeout`, and reap our own child.

    With `ticks` (the leader's recorded start time) a live leader that is not the process we
    started is left alone: its pid was reused after our stack died. A group whose leader has
    exited keeps its id while any member lives, so members are still ours.
    """
    if not is_same_process(pgid, ticks):
        return
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            _reap(pgid)
            if not group_alive(pgid):
                break
            time.sleep(0.1)
        if not group_alive(pgid):
            break
    _reap(pgid)


def _reap(pid: int) -> None:
    proc = _children.get(pid)
    if proc is not None and proc.poll() is not None:
        _children.pop(pid, None)


def tail(path: Path | None, lines: int = 20) -> str:
    """The last `lines` lines of a log file ('' when there is none)."""
    if path is None or not Path(path).exists():
        return ""
    with Path(path).open("rb") as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        fh.seek(max(0, size - 64 * 1024))
        data = fh.read().decode(errors="replace")
    return "\n".join(data.splitlines()[-lines:])
