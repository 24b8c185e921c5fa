"""Child processes bankbench supervises (server components, Harbor jobs), on psutil.

Each child leads its own session (its own process group), writes stdout+stderr to a log file,
and is stopped by a signal ladder sent to the whole group. A pid is remembered together with
its start time, so a pid the kernel later hands to an unrelated process is never signalled.
Used by `bankbench.serve` and `bankbench.sweep`; the stdlib-only task sandbox keeps its own.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import psutil

# (signal, seconds to wait for the group to be gone before the next rung)
Ladder = Sequence[tuple[signal.Signals, float]]
TERM_THEN_KILL: Ladder = ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0))

# Popen handles of children this Python process started, so they can be reaped (a child never
# waited for lingers as a zombie and still "exists"), and the exit codes of those reaped.
_children: dict[int, subprocess.Popen] = {}
_finished: dict[int, int] = {}


# The signals a ladder stops a child with before SIGKILL.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _stoppable() -> None:
    """In the child: the stop signals at their default disposition and not blocked, whatever
    this process had. Both are inherited through exec: a parent started with SIGINT ignored (a
    shell's background job `cmd &`, nohup-like launchers, CI runners) or blocked (a Ray worker)
    would hand that on, and a child that ignores SIGINT (Python then keeps it ignored: no
    KeyboardInterrupt) only stops at the ladder's next rung, after the first one's wait."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


def _die_with_parent() -> None:
    """In the child: get SIGTERM when the parent dies (even by SIGKILL), so no orphan keeps
    writing into directories the parent's next run will use."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def _stoppable_dying_with_parent() -> None:
    _stoppable()
    _die_with_parent()


def spawn(cmd: list[str], log_path: Path, *, env: dict[str, str] | None = None,
          cwd: Path | None = None, die_with_parent: bool = False) -> subprocess.Popen:
    """Start `cmd` as leader of a new session, output appended to `log_path`; it gets the stop
    signals as a stop (`_stoppable`)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        proc = subprocess.Popen(
            cmd, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=_stoppable_dying_with_parent if die_with_parent else _stoppable,
        )
    _children[proc.pid] = proc
    _finished.pop(proc.pid, None)
    return proc


def start(cmd: list[str], env: dict[str, str], log_path: Path, cwd: Path | None = None) -> int:
    """`spawn` for callers that only keep the pid (it doubles as the process-group id)."""
    return spawn(cmd, log_path, env=env, cwd=cwd).pid


def exit_code(pid: int) -> int | None:
    """Exit status of a child we started once it has ended; None while it runs (or not ours)."""
    proc = _children.get(pid)
    return _finished.get(pid) if proc is None else proc.poll()


def _running(p: psutil.Process) -> bool:
    try:
        return p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True


def is_alive(pid: int) -> bool:
    """True while `pid` runs (a zombie counts as ended)."""
    _reap(pid)
    if pid in _finished:
        return False
    try:
        return _running(psutil.Process(pid))
    except psutil.NoSuchProcess:
        return False


def _members_of(pgids: Sequence[int]) -> dict[int, list[psutil.Process]]:
    """Live (non-zombie) processes of each of the process groups `pgids`, in one scan."""
    out: dict[int, list[psutil.Process]] = {pgid: [] for pgid in pgids}
    for p in psutil.process_iter():
        try:
            pgid = os.getpgid(p.pid)
        except (ProcessLookupError, PermissionError):
            continue
        if pgid in out and _running(p):
            out[pgid].append(p)
    return out


def group_members(pgid: int) -> list[psutil.Process]:
    """Live (non-zombie) processes in process group `pgid`."""
    return _members_of([pgid])[pgid]


def group_alive(pgid: int) -> bool:
    """True while any non-zombie process is in process group `pgid`."""
    return bool(group_members(pgid))


def start_time(pid: int) -> float | None:
    """When the process started (psutil's create_time): tells a pid from a later reuse."""
    try:
        return psutil.Process(pid).create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


def is_same_process(pid: int, started: float | None) -> bool:
    """False when `pid` now names a different process than the one that started at `started`."""
    if started is None:
        return True
    now = start_time(pid)
    return now is None or now == started


def stop_group(pgid: int, ladder: Ladder = TERM_THEN_KILL, started: float | None = None) -> None:
    """Send each signal of `ladder` to the process group until no member is left; reap ours.

    With `started` (the leader's recorded start time) a live leader that is not the process we
    started is left alone: its pid was reused after our stack died. A group whose leader has
    exited keeps its id while any member lives, so members are still ours.
    """
    if not is_same_process(pgid, started):
        return
    stop_groups([pgid], ladder)


def stop_groups(pgids: Sequence[int], ladder: Ladder = TERM_THEN_KILL) -> None:
    """`stop_group` for several groups at once: each rung goes to every group still alive and
    they share its wait, so stopping N groups takes one ladder, not N of them."""
    left = list(pgids)
    for sig, wait_s in ladder:
        left = _live_groups(left)
        if not left:
            break
        for pgid in left:
            try:
                os.killpg(pgid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            left = _live_groups(left)
            if not left:
                break
            time.sleep(0.1)
    for pgid in pgids:
        _reap(pgid)


def _live_groups(pgids: list[int]) -> list[int]:
    """Those of `pgids` that still have a live member (ours reaped first)."""
    for pgid in pgids:
        _reap(pgid)
    members = _members_of(pgids)
    return [pgid for pgid in pgids if members[pgid]]


def _reap(pid: int) -> None:
    proc = _children.get(pid)
    if proc is not None and proc.poll() is not None:
        _children.pop(pid, None)
        _finished[pid] = proc.returncode


def processes_matching(match: Callable[[list[str]], bool]) -> list[int]:
    """Pids of live processes whose command line (argv list) satisfies `match`."""
    pids = []
    for p in psutil.process_iter():
        try:
            argv = p.cmdline()
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
        if argv and match(argv) and _running(p):
            pids.append(p.pid)
    return pids


def tail(path: Path | None, lines: int = 20) -> str:
    """The last `lines` lines of a log file ('' when there is none); reads at most 64 KiB."""
    if path is None or not Path(path).is_file():
        return ""
    with Path(path).open("rb") as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        fh.seek(max(0, size - 64 * 1024))
        data = fh.read().decode(errors="replace")
    return "\n".join(data.splitlines()[-lines:])


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on right now (the kernel's pick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a server could listen on the port now. Servers bind with SO_REUSEADDR (tokio,
    uvicorn, llama.cpp's httplib), so connections of a stopped server lingering in TIME_WAIT do
    not keep it, and so does this check: without the option it says "taken" for ~60 s."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
        return True
