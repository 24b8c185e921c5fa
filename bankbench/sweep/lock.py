"""One live sweep per directory: an OS lock held for the sweep's whole life, and default
directory names two sweeps started in the same second never share.

The lock is `flock` on `<sweep>/.lock`: the kernel drops it when the holding process ends,
however it ends (SIGKILL included), so a stale lock never blocks a resume. The holder writes its
pid and start time into the file, only so a refused run can say who holds it. The descriptor is
close-on-exec: Harbor children never inherit (and so never prolong) the lock.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

LOCK_FILE = ".lock"

_held: dict[Path, int] = {}  # directories this process holds, with a nesting count


class SweepBusy(RuntimeError):
    """Another live process holds the sweep directory; the message names it."""


def _holder(lock_path: Path) -> str:
    try:
        info = json.loads(lock_path.read_text())
        return f"pid {int(info['pid'])}, started {info['started']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "pid unknown"


@contextmanager
def hold(sweep_dir: Path, *, busy_hint: str) -> Iterator[None]:
    """Hold the lock of `sweep_dir` (which must exist) for the block; SweepBusy at once when
    another process holds it. `busy_hint` ends the refusal and says what to do instead; it must
    never suggest a command that would write into the live directory. Re-entrant per process."""
    key = sweep_dir.resolve()
    if key in _held:
        _held[key] += 1
        try:
            yield
        finally:
            _held[key] -= 1
        return
    lock_path = key / LOCK_FILE
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise SweepBusy(
            f"{key} is in use by a running sweep ({_holder(lock_path)}); {busy_hint}"
        ) from None
    try:
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"pid": os.getpid(),
                                 "started": datetime.now(UTC).isoformat(timespec="seconds")})
                 .encode())
        _held[key] = 1
        try:
            yield
        finally:
            del _held[key]
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def claim_new_dir(path: Path) -> Path:
    """Create a fresh directory at `path`, or at `path-2`, `path-3`… when taken: mkdir is
    atomic, so two sweeps asking for the same default name in the same second get two."""
    path.parent.mkdir(parents=True, exist_ok=True)
    for n in range(1, 1000):
        candidate = path if n == 1 else path.with_name(f"{path.name}-{n}")
        try:
            candidate.mkdir()
            return candidate
        except FileExistsError:
            continue
    raise FileExistsError(f"{path}: no free name among {path.name}-2 … -999")
