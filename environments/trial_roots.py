"""Where trial folders live on the host, who owns each, and removing those nobody owns any more.

A trial folder (`<base>/<session>-XXXXXXXX/`) holds the trial's root (the task's /app, the
verifier's files, empty mount points), its init spec and its exec output files. Deleting those
from a disk filesystem cost about 1 ms per file on the development VM (ext4 mounted with
`discard`): 50-60 ms of every trial. So by default the folders go to a memory filesystem
(/dev/shm) where the host has one that lets programs run from it, else to the system temp
folder. What an agent writes in bulk (/tmp, its log folders) is on the trial's own size-bounded
tmpfs either way; the root holds only what the task and the harness put there.

Each trial folder records its owner: the harness process (pid and start time, so a reused pid
is not taken for it, and its PID namespace, so a harness in another container sharing the
folder is never judged by pids that mean nothing here) and whether it is to be kept. A harness
killed outright (SIGKILL, OOM) cannot delete its folders, so the first trial a later harness
starts on the same base removes every folder whose owner is gone, never a kept one
(`--ek keep=true`, `--no-delete`). Folders without an owner record (made by earlier versions)
are left alone: nothing says whether they were meant to be kept.
"""

from __future__ import annotations

import os
import stat
import subprocess
import tempfile
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from environments.root_layout import DEFAULT_PATH, mounts_under

BASE_NAME = "bankbench-local-env"
OWNER_FILE = "owner.json"
# Memory filesystems tried first for the default base, in order.
MEMORY_DIRS = (Path("/dev/shm"),)
# A container's /dev/shm is often tiny (Docker gives 64 MiB): trial folders filling it mid-sweep
# would fail trials, so a memory folder with less free than this is passed over.
MIN_MEMORY_FREE = 1 << 30
_swept: set[Path] = set()  # bases this process has already cleared


class TrialOwner(BaseModel):
    """`<trial folder>/owner.json`: the harness process a trial folder belongs to."""

    pid: int = Field(description="The harness process that made the folder.")
    started: int = Field(description="Its start time (clock ticks after boot, /proc/<pid>/stat "
                         "field 22): with the pid, one process, never a later one with its pid.")
    pid_namespace: str = Field(description="The PID namespace `pid` means something in "
                               "(`pid:[inode]`): a harness in another one is never judged.")
    keep: bool = Field(False, description="Kept on purpose: never removed as a leftover.")


def default_base(memory_dirs: tuple[Path, ...] = MEMORY_DIRS,
                 min_free: int = MIN_MEMORY_FREE) -> Path:
    """The folder trial folders go in by default: on the first memory filesystem the harness
    can write and run programs from (the task's /app scripts run from the root) with at least
    `min_free` bytes free, else in the system temp folder."""
    for directory in memory_dirs:
        try:
            info = os.statvfs(directory)
        except OSError:
            continue
        roomy = info.f_bavail * info.f_frsize >= min_free
        if roomy and not info.f_flag & (os.ST_NOEXEC | os.ST_RDONLY) \
                and os.access(directory, os.W_OK):
            return directory / BASE_NAME
    return Path(tempfile.gettempdir()) / BASE_NAME


def prepare_base(base: Path) -> Path:
    """Make `base` (mode 0700) or check an existing one: it must be a folder of this user's
    that no one else can write, as anyone who could would reach every trial's root."""
    try:
        base.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.lstat(base)
    except OSError as exc:
        raise ValueError(f"LocalEnvironment cannot use {base} for trial folders: {exc}") from None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
        raise ValueError(
            f"LocalEnvironment will not put trial folders in {base}: it must be a folder owned "
            f"by uid {os.geteuid()} and writable by nobody else (choose another with "
            "--ek state_dir=PATH)")
    return base


def process_start(pid: int) -> int | None:
    """Start time of process `pid` in clock ticks after boot, None when there is none."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Split after the command name, which may hold spaces and parentheses: field 3 comes first.
    return int(text.rsplit(")", 1)[1].split()[19])


def record_owner(folder: Path, keep: bool = False) -> None:
    """Say that this process owns trial folder `folder` (and whether it is to be kept)."""
    started = process_start(os.getpid())
    assert started is not None
    owner = TrialOwner(pid=os.getpid(), started=started, pid_namespace=_own_pid_namespace(),
                       keep=keep)
    (folder / OWNER_FILE).write_text(owner.model_dump_json())


def is_leftover(folder: Path) -> bool:
    """True for a trial folder whose owning process is gone and which is not to be kept."""
    try:
        owner = TrialOwner.model_validate_json((folder / OWNER_FILE).read_bytes())
    except (OSError, ValidationError):
        return False  # no record (an earlier version's folder) or not ours to judge
    if owner.keep or owner.pid_namespace != _own_pid_namespace():
        return False  # kept, or made by a harness whose pids mean nothing here
    return process_start(owner.pid) != owner.started


def _own_pid_namespace() -> str:
    return os.readlink("/proc/self/ns/pid")


def remove_tree(folder: Path) -> list[str]:
    """Delete `folder` and everything in it; returns host mount points found under it instead
    (then nothing is deleted: never recurse into a host mount). `rm` walks a tree of any depth
    (shutil.rmtree recurses, and fails on a deep one) and stays on this filesystem."""
    mounted = mounts_under(folder)
    if mounted:
        return mounted
    subprocess.run(["rm", "-rf", "--one-file-system", "--", str(folder)],
                   capture_output=True, env={"PATH": DEFAULT_PATH})
    return []


def remove_leftovers(base: Path) -> list[Path]:
    """Once per process and base: delete the trial folders in `base` whose owner is gone.
    Returns the folders deleted."""
    if base in _swept:
        return []
    _swept.add(base)
    removed = []
    try:
        entries = list(os.scandir(base))
    except OSError:
        return []
    for entry in entries:
        try:  # another harness sharing the base may delete its folder while we look
            if not entry.is_dir(follow_symlinks=False) or \
                    entry.stat(follow_symlinks=False).st_uid != os.geteuid():
                continue
        except OSError:
            continue
        folder = Path(entry.path)
        if is_leftover(folder) and not remove_tree(folder):
            removed.append(folder)
    return removed
