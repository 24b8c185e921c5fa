"""Finding and ending a trial's processes, wherever in the trial they hide.

A trial's processes are those in its PID namespace and in every PID namespace made below it
(an agent may make its own with `unshare --user --pid`): PID namespaces nest, and no process
leaves the one it was born in for one above it. So membership is the namespace or an ancestor
of it, asked of the kernel (NS_GET_PARENT) for processes in namespaces other than the host's.
With root, the agent also has a uid of its own: every process of that uid on the machine is
the agent's, whatever namespace it made (a user namespace renames a uid inside, never for the
host's kernel). Everything is SIGKILLed and looked for again until none is left: a fork can
race a sweep, but a killed process forks no more.
"""

from __future__ import annotations

import fcntl
import os
import signal
import time
from pathlib import Path

NS_GET_PARENT = 0xB702  # ioctl on a namespace fd: _IO(0xb7, 0x2), the parent PID namespace
MAX_PID_NS_DEPTH = 32  # the kernel's own limit on nested PID namespaces


def pid_namespace(pid: int | str) -> str:
    """`pid:[inode]` of the PID namespace process `pid` is in."""
    return os.readlink(f"/proc/{pid}/ns/pid")


def _inode(namespace: str) -> int:
    return int(namespace.split("[", 1)[1].rstrip("]"))


def _below(pid: str, ancestor_inode: int) -> bool:
    """True when process `pid`'s PID namespace lies below the one numbered `ancestor_inode`."""
    try:
        fd = os.open(f"/proc/{pid}/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        for _ in range(MAX_PID_NS_DEPTH):
            parent = fcntl.ioctl(fd, NS_GET_PARENT)  # EPERM above the caller's own namespace
            os.close(fd)
            fd = parent
            if os.fstat(fd).st_ino == ancestor_inode:
                return True
    except OSError:
        return False
    finally:
        os.close(fd)
    return False


def members(namespace: str, exclude: int | None = None) -> list[int]:
    """Host process ids of every process in PID namespace `namespace` or one below it."""
    own = pid_namespace("self")
    wanted = _inode(namespace)
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == exclude:
            continue
        try:
            theirs = pid_namespace(entry.name)
        except OSError:
            continue
        if theirs == namespace or (theirs != own and _below(entry.name, wanted)):
            found.append(int(entry.name))
    return found


def processes_of(uid: int) -> list[int]:
    """Host process ids whose real, effective, saved or filesystem uid is `uid`. From
    /proc/<pid>/status: the owner of /proc/<pid> itself turns to root when a process makes
    itself non-dumpable."""
    wanted = str(uid)
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status", "rb") as status:
                for line in status:
                    if line.startswith(b"Uid:"):
                        if wanted in line.decode().split()[1:]:
                            found.append(int(entry.name))
                        break
        except OSError:
            continue
    return found


def kill_group(pgid: int) -> None:
    """SIGKILL one command's process group (a command the harness started in its own
    session); gone already is fine."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def end_all(find, within_sec: float = 5.0) -> int:
    """SIGKILL every process `find()` lists until it lists none alive; returns how many
    were hit."""
    hit, sweeps = 0, 0
    deadline = time.monotonic() + within_sec
    while time.monotonic() < deadline:
        found = [pid for pid in find() if not is_zombie(pid)]
        if not found:
            break
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
                hit += 1
            except (ProcessLookupError, PermissionError):
                continue
        sweeps += 1
        if sweeps > 2:  # still some left: give the kernel a moment to deliver
            time.sleep(0.005)
    return hit


def is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (OSError, IndexError):
        return True
