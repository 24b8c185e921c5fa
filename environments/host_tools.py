"""The host's tools a trial is entered with, and the recipe for private namespaces that works
here (as root, or in an unprivileged user namespace), found once per process."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

_TOOL_DIRS = "/usr/sbin:/usr/bin:/sbin:/bin"


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
