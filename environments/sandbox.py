"""The machinery behind LocalEnvironment: the host's tools, and a private root per trial.

Each trial owns a host directory (its "root") holding the task paths as plain directories;
environments/namespace.py mounts the rest inside the trial's own namespaces. Mounts live only
there, so nothing is ever mounted on the host and deleting the root is a plain recursive
delete.
"""

from __future__ import annotations

import asyncio
import functools
import os
import posixpath
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

# Host directories every root sees read-only (symlinks such as /bin -> usr/bin are copied).
SYSTEM_DIRS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc")
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Private directory, first on PATH, holding a python3 link when the host has no usable
# system python3 (>= 3.8).
FALLBACK_BIN = "/.localenv/bin"
TIMEOUT_EXIT_CODE = 124  # what coreutils `timeout` returns
_TOOL_DIRS = "/usr/sbin:/sbin:/usr/bin:/bin"


class NamespaceUnavailableError(RuntimeError):
    """The host cannot give a command a private mount namespace."""


@dataclass(frozen=True)
class HostTools:
    """Absolute host paths of the programs a root is entered with, and how."""

    unshare: list[str]  # argv prefix that opens private mount, PID and IPC namespaces
    userns: bool  # True when the namespace is a user namespace mapping us to root
    mount: str
    chroot: str
    sh: str
    nsenter: str
    prlimit: str


def _which(name: str) -> str | None:
    path = os.environ.get("PATH", "") + ":" + _TOOL_DIRS
    return shutil.which(name, path=path)


def _namespace_attempts(unshare: str, as_root: bool) -> list[tuple[list[str], bool]]:
    private = ["--mount", "--pid", "--fork", "--ipc", "--propagation", "private"]
    plain = ([unshare, *private], False)
    userns = ([unshare, "--user", "--map-root-user", *private], True)
    return [plain, userns] if as_root else [userns]


def probe_host_tools(as_root: bool | None = None) -> HostTools:
    """Find the tools and a namespace recipe that works here, or say exactly what is missing.

    `as_root` (default: whether we are root) False tries only the unprivileged recipe.
    """
    as_root = os.geteuid() == 0 if as_root is None else as_root
    names = ("unshare", "nsenter", "mount", "chroot", "sh", "bash", "prlimit")
    found = {name: _which(name) for name in names}
    missing = [name for name, path in found.items() if path is None]
    if missing:
        raise NamespaceUnavailableError(
            f"LocalEnvironment needs {', '.join(missing)} on the host "
            "(util-linux and coreutils); install them or use --env docker"
        )
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="localenv-probe-") as probe_dir:
        for prefix, userns in _namespace_attempts(found["unshare"], as_root):  # type: ignore[arg-type]
            probe = [*prefix, found["mount"], "--bind", probe_dir, probe_dir]
            done = subprocess.run(probe, capture_output=True, text=True, timeout=30)
            if done.returncode == 0:
                return HostTools(
                    prefix, userns, found["mount"], found["chroot"], found["sh"],  # type: ignore[arg-type]
                    found["nsenter"], found["prlimit"],  # type: ignore[arg-type]
                )
            reason = (done.stderr or done.stdout).strip() or f"exit {done.returncode}"
            failures.append(f"`{' '.join(prefix[1:])}`: {reason}")
    hint = (
        "run as root, or enable unprivileged user namespaces "
        "(sysctl user.max_user_namespaces>0; kernel.unprivileged_userns_clone=1 on some "
        "Debian/Ubuntu kernels; kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu 24.04+), "
        "or use --env docker"
    )
    raise NamespaceUnavailableError(
        f"LocalEnvironment cannot create private mount and PID namespaces as "
        f"{'root' if as_root else 'an unprivileged user'} "
        f"({'; '.join(failures)}): {hint}"
    )


@functools.cache
def cached_host_tools() -> HostTools:
    return probe_host_tools()


@functools.cache
def system_python_ok() -> bool:
    """True when the system dirs hold a python3 >= 3.8 (what task scripts assume)."""
    for directory in ("/usr/local/bin", "/usr/bin", "/bin"):
        candidate = Path(directory) / "python3"
        if candidate.exists():
            check = [str(candidate), "-c", "import sys; sys.exit(sys.version_info < (3, 8))"]
            if subprocess.run(check, capture_output=True, timeout=30).returncode == 0:
                return True
    return False


def fallback_python() -> Path:
    """The interpreter behind the harness (>= 3.12), by its versioned name, which every
    standard installation has (a venv's own `python` may be a copy outside the prefix)."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    return Path(sys.base_prefix).resolve() / "bin" / version


@dataclass
class BindMount:
    source: Path  # host path
    target: str  # path inside the root
    read_only: bool


@dataclass
class RootLayout:
    """What one root holds: private directories, binds from the host, the PATH inside."""

    root: Path
    private_dirs: dict[str, int]  # path inside the root -> mode
    binds: list[BindMount] = field(default_factory=list)
    path: str = DEFAULT_PATH


def plan_layout(
    root: Path,
    private_dirs: dict[str, int],
    extra_read_only: list[Path],
    host_mounts: list[BindMount],
) -> RootLayout:
    layout = RootLayout(root=root, private_dirs=dict(private_dirs))
    for name in SYSTEM_DIRS:
        host = Path("/") / name
        if host.is_dir() and not host.is_symlink():
            layout.binds.append(BindMount(host, f"/{name}", read_only=True))
    for path in extra_read_only:
        layout.binds.append(BindMount(path, str(path), read_only=True))
    if not system_python_ok():
        # The harness's own interpreter (>= 3.12) stands in, linked from a private bin dir.
        prefix = Path(sys.base_prefix).resolve()
        layout.binds.append(BindMount(prefix, str(prefix), read_only=True))
        layout.private_dirs[FALLBACK_BIN] = 0o755
        layout.path = f"{FALLBACK_BIN}:{DEFAULT_PATH}"
    layout.binds.extend(host_mounts)
    return layout


def inside(root: Path, container_path: str) -> Path:
    """Host path of `container_path` within `root` (lexical: `..` cannot climb out)."""
    relative = posixpath.normpath("/" + str(container_path)).lstrip("/")
    return root / relative if relative else root


def build_root(layout: RootLayout) -> None:
    root = layout.root
    root.mkdir(mode=0o755, parents=True)
    for name in SYSTEM_DIRS:
        host = Path("/") / name
        if host.is_symlink():  # merged-/usr hosts: /bin -> usr/bin
            (root / name).symlink_to(os.readlink(host))
    for directory in ("dev", "proc", ".localenv/scratch"):
        (root / directory).mkdir(parents=True)
    for target, mode in layout.private_dirs.items():
        path = inside(root, target)
        path.mkdir(parents=True, exist_ok=True)
        path.chmod(mode)
    if FALLBACK_BIN in layout.private_dirs:
        link = inside(root, FALLBACK_BIN) / "python3"
        link.symlink_to(fallback_python())
    for bind in layout.binds:
        target = inside(root, bind.target)
        if bind.source.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.touch(exist_ok=True)


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def mounts_under(path: Path) -> list[str]:
    """Mount points at or below `path` in this (the host's) mount namespace."""
    prefix = str(path.resolve())
    points = []
    with open("/proc/self/mountinfo") as mountinfo:
        for line in mountinfo:
            point = line.split()[4].encode().decode("unicode_escape")
            if point == prefix or point.startswith(prefix + "/"):
                points.append(point)
    return points


async def run_command(
    argv: list[str], env: dict[str, str], timeout_sec: float | None, output_dir: Path
) -> tuple[int, str, str, bool]:
    """Run argv in its own process group with output to files; kill the group on timeout
    or cancellation. Returns (exit code, stdout, stderr, timed_out).

    Files rather than pipes: a background job that keeps the pipes open would otherwise
    hold the command open until it ended.
    """
    fd, out_name = tempfile.mkstemp(dir=output_dir, suffix=".out")
    out_file = os.fdopen(fd, "wb")
    fd, err_name = tempfile.mkstemp(dir=output_dir, suffix=".err")
    err_file = os.fdopen(fd, "wb")
    timed_out = False
    try:
        with out_file, err_file:
            process = await asyncio.create_subprocess_exec(
                *argv, env=env, stdin=asyncio.subprocess.DEVNULL,
                stdout=out_file, stderr=err_file, start_new_session=True,
            )
        try:
            code = await asyncio.wait_for(process.wait(), timeout=timeout_sec)
        except TimeoutError:
            kill_group(process.pid)
            code = await process.wait()
            timed_out = True
        except BaseException:  # cancelled: leave nothing running behind us
            kill_group(process.pid)
            raise
        stdout = Path(out_name).read_bytes().decode(errors="replace")
        stderr = Path(err_name).read_bytes().decode(errors="replace")
        return (TIMEOUT_EXIT_CODE if timed_out else code), stdout, stderr, timed_out
    finally:
        for name in (out_name, err_name):
            Path(name).unlink(missing_ok=True)
