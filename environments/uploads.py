"""Copying the harness's files into a trial without writing, as root, where the agent could.

Harbor uploads the task's solution and tests, and writes the agent's logs back into
`/logs/agent` before verifying. A place the agent's user could write (or a link it planted on
the way) is written from inside the trial by `tar` run *as the agent's uid*: whatever the agent
swapped in meanwhile, the copy writes nothing the agent could not. Into the agent's log folder,
files already there are kept: the bank's records are never replaced by Harbor's earlier copy of
them. Root-only places are written directly from the host.
"""

from __future__ import annotations

import io
import os
import shlex
import shutil
import stat
import subprocess
import tarfile
from pathlib import Path

from environments.root_layout import DEFAULT_PATH


def normal(container_path: str) -> str:
    """`container_path` as one absolute path (normpath alone keeps a leading `//`)."""
    return os.path.normpath("/" + container_path.lstrip("/"))


def is_under(container_path: str, folder: str) -> bool:
    path = normal(container_path)
    return path == folder or path.startswith(folder + "/")


def skip_special_files(directory: str, names: list[str]) -> list[str]:
    """copytree ignore hook: FIFOs, sockets and devices would block or fail a copy."""
    skipped = []
    for name in names:
        mode = os.lstat(os.path.join(directory, name)).st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
            skipped.append(name)
    return skipped


def writable_by_others(view: Path, host: Path) -> bool:
    """True when someone but root could have placed something at or above `host` (a folder
    not root's or open to others, or a link), so a copy there must be made from inside."""
    for path in [host, *host.parents]:
        if path == view:  # the root itself (a /proc link, not the agent's)
            return False
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(info.st_mode) or info.st_uid != 0 or info.st_mode & 0o022:
            return True
    return False


def copy_tree_direct(source: Path, target: Path) -> None:
    """Into a root-only place: links kept as links, special files left out."""
    shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True,
                    ignore=skip_special_files)


def copy_in_as(enter_argv: list[str], source: Path, folder: str, name: str,
               keep_existing: bool, folder_exists: bool) -> None:
    """Unpack `source` as `folder`/`name` (`name` "." for a folder's contents) with tar run by
    `enter_argv` (a command prefix that enters the trial as the agent's uid). `keep_existing`:
    files already there stay. `folder_exists`: tar alone, no shell to make the folder first
    (if it went away meanwhile, tar fails and so does the copy)."""
    archive = _tar(source, name)
    keep = ["--skip-old-files"] if keep_existing else []
    unpack = ["tar", "-x", *keep, "--no-same-owner", "--no-same-permissions", "-f", "-",
              "-C", folder]
    if not folder_exists:
        unpack = ["/bin/sh", "-c", f"mkdir -p {shlex.quote(folder)} && "
                  + " ".join(shlex.quote(word) for word in unpack)]
    done = subprocess.run([*enter_argv, *unpack], input=archive, capture_output=True,
                          env={"PATH": DEFAULT_PATH})
    if done.returncode != 0:
        raise OSError(f"LocalEnvironment could not copy {source} to {folder}/{name}: "
                      f"{done.stderr.decode(errors='replace').strip()}")


def _tar(source: Path, name: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        archive.add(source, arcname=name, filter=_regular_entries)
    return buffer.getvalue()


def _regular_entries(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    """What copytree's ignore hook keeps: files, folders, links (no devices or FIFOs)."""
    return info if info.isfile() or info.isdir() or info.issym() or info.islnk() else None


def empty_folder(folder: Path) -> None:
    """Remove everything in `folder` (a root-only one), links not followed."""
    for entry in os.scandir(folder):
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            os.unlink(entry.path)
