"""One trial's namespaces: the mounts made once, the processes in them, the files seen through them.

At start, `unshare` opens private mount, PID and IPC namespaces for the trial; their first
process (PID 1 inside, "init") runs the generated `setup.sh`, which builds the trial's view:
a small private /dev, a procfs of the trial's own PID namespace (no host process is visible),
a size-bounded scratch tmpfs for /tmp, /var/tmp and /dev/shm, the host's system directories
read-only, Harbor's log folders. It then makes the root the namespace's own root
(pivot_root) and lets go of the host's tree, so nothing above the root exists in there: not
even a process that escapes a chroot (say, from a user namespace of its own) finds the host.
Init holds the namespaces open; every command `nsenter`s them (which puts it at that root).
When init ends, the kernel ends every process of the trial.

The harness reaches the trial's files through init's view (/proc/<init>/root), so writes land
on the scratch tmpfs where the agent sees them; symlinks there are resolved as they would be
inside the root, never against the host's tree.
"""

from __future__ import annotations

import os
import shlex
import signal
import stat
import subprocess
import time
from pathlib import Path

from environments.sandbox import HostTools, NamespaceUnavailableError, RootLayout, inside

SCRATCH = "/.localenv/scratch"  # the tmpfs mount point inside the root
OLD_ROOT = "/.localenv/old-root"  # where pivot_root puts the host's tree, then unmounted
_TOOL_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
# Scratch sub-folder -> where it appears in the root, and its mode.
SCRATCH_DIRS = {"tmp": ("/tmp", 0o1777), "var-tmp": ("/var/tmp", 0o1777),
                "shm": ("/dev/shm", 0o1777)}
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
MAX_SYMLINKS = 40  # as the kernel's own limit on one path lookup


# The trial's init: print `ready`, reap children, end at EOF on stdin. argv[1] (the setup
# script's path) only names the process for `ps`.
INIT = """import os, signal, sys
def reap(*_):
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass
signal.signal(signal.SIGCHLD, reap)
os.write(1, b"ready\\n")
while os.read(0, 4096):
    pass
"""


def setup_script(layout: RootLayout, tools: HostTools, scratch_mb: int,
                 modes_after_mounts: dict[str, int], script: Path) -> str:
    """Shell script run as PID 1 of the fresh namespaces: make the mounts, then become the
    trial's init (prints `ready`, holds the namespaces open until stdin closes). With
    arguments (manual use: `unshare --mount --pid --fork sh setup.sh /bin/bash -l`) it runs
    them in the root instead."""
    mount = shlex.quote(tools.mount)
    lines = ["#!/bin/sh", "# Sets up one LocalEnvironment root's mounts (see environments/).",
             "set -e", f"R={shlex.quote(str(layout.root))}", f"PATH={_TOOL_PATH}",
             # The root must be a mount point of its own to become the namespace's root.
             f'{mount} --bind "$R" "$R"',
             # A private /dev: the harmless devices, its own ptys, no host disks or shm.
             f'{mount} -t tmpfs -o mode=755,size=512k,nosuid,noexec tmpfs "$R"/dev']
    for name in DEVICES:
        lines += [f': > "$R"/dev/{name}', f'{mount} --bind /dev/{name} "$R"/dev/{name}']
    lines += [
        'mkdir "$R"/dev/pts "$R"/dev/shm',
        f'{mount} -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts "$R"/dev/pts'
        f' 2>/dev/null || {mount} --rbind /dev/pts "$R"/dev/pts',
        'ln -s pts/ptmx "$R"/dev/ptmx',
        'ln -s /proc/self/fd "$R"/dev/fd',
        'ln -s /proc/self/fd/0 "$R"/dev/stdin',
        'ln -s /proc/self/fd/1 "$R"/dev/stdout',
        'ln -s /proc/self/fd/2 "$R"/dev/stderr',
        # This PID namespace's own procfs: only the trial's processes are visible.
        f'{mount} -t proc -o nosuid,nodev,noexec proc "$R"/proc',
        f'S="$R"{SCRATCH}',
        f'{mount} -t tmpfs -o size={int(scratch_mb)}m,mode=755,nosuid,nodev tmpfs "$S"',
    ]
    for name, (target, mode) in SCRATCH_DIRS.items():
        lines += [f'mkdir -p "$S"/{name} "$R"{target}', f'chmod {mode:o} "$S"/{name}',
                  f'{mount} --bind "$S"/{name} "$R"{target}']
    for bind in layout.binds:
        target = shlex.quote(str(inside(Path("/"), bind.target)))
        # Made again here: a mount point under /tmp is hidden by the scratch tmpfs.
        if bind.source.is_dir():
            lines.append(f'mkdir -p "$R"{target}')
        else:
            lines.append(f'mkdir -p "$(dirname "$R"{target})" && touch "$R"{target}')
        lines.append(f'{mount} --rbind {shlex.quote(str(bind.source))} "$R"{target}')
        if bind.read_only:
            lines.append(f'{mount} -o remount,bind,ro "$R"{target}')
    # Modes of folders Harbor mounts from the host apply to the mounted folder itself.
    for path, mode in modes_after_mounts.items():
        lines.append(f'chmod {mode:o} "$R"{shlex.quote(path)}')
    lines += [
        # From here on there is no host tree: only the root, as `/`.
        f'cd "$R" && mkdir -p .{OLD_ROOT} && pivot_root . .{OLD_ROOT} && cd /',
        f"umount -l {OLD_ROOT} && rmdir {OLD_ROOT}",
        f"PATH={shlex.quote(layout.path)}",
        'if [ $# -gt 0 ]; then exec "$@"; fi',
        # PID 1 from here on: it reaps the orphans every trial makes (a shell would not),
        # and ends, ending the trial, when the harness closes its stdin.
        f"exec python3 -I -S -c {shlex.quote(INIT)} {shlex.quote(str(script))}",
    ]
    return "\n".join(lines) + "\n"


def children_of(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(child) for child in text.split()]


class NamespaceHolder:
    """Keeps one trial's namespaces alive, mounts made once; commands `nsenter` them.

    `unshare` forks init and waits on it; init waits on a pipe from this process, so all of
    the trial ends when the harness ends, even if it is killed before it can stop the
    environment (`--kill-child` covers `unshare` itself being killed).
    """

    def __init__(self, tools: HostTools, script: Path) -> None:
        self._tools = tools
        self._script = script
        self._process: subprocess.Popen[bytes] | None = None
        self.init_pid: int | None = None  # init's process id as the host sees it
        self._pid_ns: str | None = None

    def start(self) -> None:
        process = subprocess.Popen(
            [*self._tools.unshare, "--kill-child", self._tools.sh, str(self._script)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self._process = process
        assert process.stdout is not None and process.stderr is not None
        if process.stdout.readline().strip() != b"ready":
            process.wait(timeout=30)
            reason = process.stderr.read().decode(errors="replace").strip()
            raise NamespaceUnavailableError(
                f"LocalEnvironment could not mount its root ({self._script}): {reason}"
            )
        process.stdout.close()
        process.stderr.close()
        children = children_of(process.pid)
        if len(children) != 1:
            raise NamespaceUnavailableError(
                f"LocalEnvironment: cannot find the trial's init process under {process.pid}")
        self.init_pid = children[0]
        self._pid_ns = os.readlink(f"/proc/{self.init_pid}/ns/pid")

    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def enter_argv(self) -> list[str]:
        """argv prefix that runs a program of the root inside the namespaces, at the root (as a
        child of init's PID namespace: nsenter forks into it). Host tools run there only
        from the system folders the root shows at the same paths."""
        if not self.alive() or self.init_pid is None:
            raise RuntimeError("LocalEnvironment's namespace is gone (stopped, or its holder died)")
        user = ["--user"] if self._tools.userns else []
        return [self._tools.nsenter, f"--target={self.init_pid}", *user, "--mount", "--pid",
                "--ipc", "--"]

    def view(self) -> str:
        """Host path of the trial's root as its processes see it (its mounts included)."""
        if self.init_pid is None:
            raise RuntimeError("LocalEnvironment's namespace is not started")
        return f"/proc/{self.init_pid}/root"

    def members(self) -> list[int]:
        """Host process ids of every process in the trial's PID namespace but init."""
        if self._pid_ns is None:
            return []
        found = []
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit() or int(entry.name) == self.init_pid:
                continue
            try:
                if os.readlink(f"/proc/{entry.name}/ns/pid") == self._pid_ns:
                    found.append(int(entry.name))
            except OSError:
                continue
        return found

    def end_members(self, within_sec: float = 5.0) -> int:
        """SIGKILL every process of the trial but init until none is left; returns how many
        were hit. Forks race the sweep, so it repeats (a killed process forks no more)."""
        hit = 0
        deadline = time.monotonic() + within_sec
        while time.monotonic() < deadline:
            members = [pid for pid in self.members() if not _is_zombie(pid)]
            if not members:
                break
            for pid in members:
                try:
                    os.kill(pid, signal.SIGKILL)
                    hit += 1
                except (ProcessLookupError, PermissionError):
                    continue
            time.sleep(0.01)
        return hit

    def stop(self) -> None:
        if self._process is None:
            return
        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (OSError, IndexError):
        return True


def resolve_inside(view: str, container_path: str) -> tuple[str, str]:
    """(host path, container path) of `container_path` with every symlink on the way resolved
    as the kernel would inside the root: absolute targets start again at the root and `..`
    never climbs above it. The host path is `view` joined with the resolved container path,
    left for the kernel to open (never realpath()'d: /proc/<pid>/root is not a plain link)."""
    pending = [part for part in container_path.split("/") if part]
    done: list[str] = []
    links = 0
    while pending:
        part = pending.pop(0)
        if part == ".":
            continue
        if part == "..":
            if done:
                done.pop()
            continue
        candidate = view + "/" + "/".join([*done, part])
        try:
            mode = os.lstat(candidate).st_mode
        except FileNotFoundError:
            done.append(part)
            continue
        if not stat.S_ISLNK(mode):
            done.append(part)
            continue
        links += 1
        if links > MAX_SYMLINKS:
            raise OSError(f"{container_path}: too many levels of symbolic links")
        target = os.readlink(candidate)
        if target.startswith("/"):
            done = []
        pending[:0] = [p for p in target.split("/") if p]
    resolved = "/" + "/".join(done)
    return view + resolved.rstrip("/") if done else view, resolved
