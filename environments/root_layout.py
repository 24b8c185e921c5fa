"""A trial's root on the host: what it holds (private folders, binds from the host, the PATH
inside) and building it.

Each trial owns a host directory (its "root") holding the task paths as plain directories;
environments/namespace.py mounts the rest inside the trial's own namespaces. Mounts live only
there, so nothing is ever mounted on the host and deleting the root is a plain recursive
delete.
"""

from __future__ import annotations

import os
import posixpath
import sys
from dataclasses import dataclass, field
from pathlib import Path

from environments.host_tools import fallback_python, system_python_ok

# Host directories every root sees read-only (symlinks such as /bin -> usr/bin are copied).
SYSTEM_DIRS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc")
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Private directory, first on PATH, holding a python3 link when the host has no usable
# system python3 (>= 3.8).
FALLBACK_BIN = "/.localenv/bin"


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
