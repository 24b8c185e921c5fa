"""One trial's namespaces: the mounts made once, the processes in them, the files seen through them.

At start, `unshare` opens private mount, PID and IPC namespaces for the trial; their first
process (PID 1 inside, "init": trial_init.py, given a JSON spec) builds the trial's view:
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
import stat
import subprocess
import sys
from pathlib import Path

from environments import process_end
from environments.host_tools import HostTools, NamespaceUnavailableError
from environments.root_layout import RootLayout, inside

SCRATCH = "/.localenv/scratch"  # the tmpfs mount point inside the root
OLD_ROOT = "/.localenv/old-root"  # where pivot_root puts the host's tree, then unmounted
# Scratch sub-folder -> where it appears in the root, and its mode.
SCRATCH_DIRS = {"tmp": ("/tmp", 0o1777), "var-tmp": ("/var/tmp", 0o1777),
                "shm": ("/dev/shm", 0o1777)}
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
MAX_SYMLINKS = 40  # as the kernel's own limit on one path lookup


INIT_SCRIPT = Path(__file__).with_name("trial_init.py")


def init_spec(layout: RootLayout, scratch_mb: int, modes_after_mounts: dict[str, int], *,
              scratch_logs: list[str], max_files: int, loopback: bool) -> dict[str, object]:
    """What trial_init.py mounts, as JSON: the private /dev, the scratch tmpfs and its
    folders (`scratch_logs` too: the agent's log folders, so they cost the trial's bounded
    scratch and never the host's disk), the binds, and the modes of the mounted log folders
    (in order); `loopback` brings up `lo` of a network namespace of the trial's own."""
    dirs = [[name, target, mode] for name, (target, mode) in SCRATCH_DIRS.items()]
    dirs += [[f"logs-{n}", target, 0o1777] for n, target in enumerate(scratch_logs)]
    return {
        "root": str(layout.root),
        "devices": list(DEVICES),
        "scratch": SCRATCH,
        "scratch_mb": int(scratch_mb),
        "scratch_inodes": int(max_files),
        "scratch_dirs": dirs,
        "binds": [[str(b.source), str(inside(Path("/"), b.target)), b.read_only]
                  for b in layout.binds],
        "modes": [[path, mode] for path, mode in modes_after_mounts.items()],
        "old_root": OLD_ROOT,
        "loopback": loopback,
    }


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

    def __init__(self, tools: HostTools, spec: Path, private_network: bool = False) -> None:
        self._tools = tools
        self._spec = spec
        self._net = private_network
        self._process: subprocess.Popen[bytes] | None = None
        self.init_pid: int | None = None  # init's process id as the host sees it
        self._pid_ns: str | None = None

    def start(self) -> None:
        process = subprocess.Popen(
            [*self._tools.unshare, *(["--net"] if self._net else []), "--kill-child",
             sys.executable, "-I", "-S", str(INIT_SCRIPT), str(self._spec)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self._process = process
        assert process.stdout is not None and process.stderr is not None
        if process.stdout.readline().strip() != b"ready":
            process.wait(timeout=30)
            reason = process.stderr.read().decode(errors="replace").strip()
            raise NamespaceUnavailableError(
                f"LocalEnvironment could not mount its root ({self._spec}): {reason}"
            )
        process.stdout.close()
        process.stderr.close()
        children = children_of(process.pid)
        if len(children) != 1:
            raise NamespaceUnavailableError(
                f"LocalEnvironment: cannot find the trial's init process under {process.pid}")
        self.init_pid = children[0]
        self._pid_ns = process_end.pid_namespace(self.init_pid)

    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def enter_argv(self, network: bool = False) -> list[str]:
        """argv prefix that runs a program of the root inside the namespaces, at the root (as a
        child of init's PID namespace: nsenter forks into it). Host tools run there only
        from the system folders the root shows at the same paths. `network`: into the trial's
        own network namespace too (the agent's commands); without it a command keeps the
        host's network (the harness's own steps, the bank service's customer requests)."""
        if not self.alive() or self.init_pid is None:
            raise RuntimeError("LocalEnvironment's namespace is gone (stopped, or its holder died)")
        user = ["--user"] if self._tools.userns else []
        net = ["--net"] if network and self._net else []
        return [self._tools.nsenter, f"--target={self.init_pid}", *user, "--mount", "--pid",
                "--ipc", *net, "--"]

    def view(self) -> str:
        """Host path of the trial's root as its processes see it (its mounts included)."""
        if self.init_pid is None:
            raise RuntimeError("LocalEnvironment's namespace is not started")
        return f"/proc/{self.init_pid}/root"

    def members(self) -> list[int]:
        """Host process ids of every process of the trial but init: in its PID namespace
        and in any the agent made below it."""
        if self._pid_ns is None:
            return []
        return process_end.members(self._pid_ns, exclude=self.init_pid)

    def end_members(self, within_sec: float = 5.0) -> int:
        """SIGKILL every process of the trial but init until none is left; returns how many
        were hit."""
        return process_end.end_all(self.members, within_sec)

    def end_user(self, uid: int, within_sec: float = 5.0) -> int:
        """SIGKILL every process on the machine that runs as `uid` (real, effective, saved or
        filesystem) until none is left; returns how many were hit. The trial's agent has a
        uid of its own, so this is all of the agent's processes and nobody else's, in
        whatever namespaces it made (setuid programs do nothing on the trial's nosuid
        mounts)."""
        return process_end.end_all(lambda: process_end.processes_of(uid), within_sec)

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
