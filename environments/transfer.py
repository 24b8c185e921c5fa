"""Copying a trial's files out to the host without following a single link.

Harbor's own copy would list a folder and then open each entry again by its path, and a path
through `/proc/<init>/root` resolves an absolute link against the *host's* root: an agent that
turns a listed folder into `-> /` between the two gets host files copied into the job by root.
Here every step opens the next name relative to the folder already open, with O_NOFOLLOW, so a
link (planted or swapped in at any moment) is never followed: it is left out, as are FIFOs,
sockets and devices. The walk keeps its own stack (no recursion), goes at most `max_depth`
folders deep and copies at most `max_entries` entries, so no tree can make it fail; what it
leaves out is counted and the first few are named. It never replaces a file the host target
already has: those were written by the harness (the agent's own host-side logs), and an agent's
file of the same name must not stand in for them.

Harbor parses some files of a trial on the host, in its own process, and not every failure of
that parse is caught (0.25 reads `agent/trajectory.json` with `read_text()` and catches only
`OSError` and `ValidationError`: three bytes that are not UTF-8 end the whole job). A file
under such a name (`HOST_PARSED`) is copied under it only when it is what Harbor expects (UTF-8
JSON within a size bound); otherwise it is kept under another name and recorded. Names are
recorded escaped (`\xff` for a byte that is not UTF-8), so a record always serialises.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, BaseModel, Field

OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO swapped in for a listed file must not block the copy.
OPEN_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
CREATE_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
NAMED_AT_MOST = 20
CHUNK = 1 << 20
# Names Harbor parses on the host wherever they appear in a copied log folder (an agent's
# trajectory, a step's too), and the largest such file copied.
HOST_PARSED = frozenset({"trajectory.json"})
MAX_PARSED_BYTES = 64 << 20
REJECTED_SUFFIX = ".localenv-rejected"


def escape_name(name: str) -> str:
    """`name` as printable text: bytes that are not UTF-8 (which Python names carry as lone
    surrogates) written `\\xNN`, so the name always serialises."""
    try:
        raw = name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raw = name.encode("utf-8", "backslashreplace")
    return raw.decode("utf-8", "backslashreplace")


Name = Annotated[str, AfterValidator(escape_name)]


class LinkInPathError(FileNotFoundError):
    """A path the harness was asked to copy runs through a link (or is one)."""


class LeftOut(BaseModel):
    path: Name = Field(description="Path inside the trial (escaped).")
    why: str = Field(description="link | special file | too deep | too many entries | vanished")


class Rejected(BaseModel):
    """A file under a name Harbor parses that is not what Harbor expects."""

    path: Name = Field(description="Path inside the trial (escaped).")
    kept_as: Name | None = Field(description="Its name in the job folder; None when that "
                                 "name was taken too and the file was left out.")
    why: str


class CopyReport(BaseModel):
    """What one copy out of the trial did."""

    source: Name
    files: int = 0
    bytes: int = 0
    left_out: int = 0
    examples: list[LeftOut] = Field(default_factory=list)
    host_files_kept: list[Name] = Field(
        default_factory=list, description="Files the host target already had (the harness's "
        "own, e.g. the agent's host-side logs), kept instead of the trial's file of that name.")
    rejected: list[Rejected] = Field(default_factory=list)

    def leave_out(self, path: str, why: str) -> None:
        self.left_out += 1
        if len(self.examples) < NAMED_AT_MOST:
            self.examples.append(LeftOut(path=path, why=why))

    def keep_host_file(self, path: str) -> None:
        if len(self.host_files_kept) < NAMED_AT_MOST:
            self.host_files_kept.append(escape_name(path))


def open_inside(view: str, container_path: str, directory: bool) -> int:
    """An fd of `container_path` in the trial whose root the host sees at `view`, opened one
    name at a time without following any link; LinkInPathError if one is in the way."""
    parts = [p for p in container_path.split("/") if p and p != "."]
    if ".." in parts:
        raise LinkInPathError(errno.EINVAL, f"{container_path}: `..` is not allowed")
    fd = os.open(view, OPEN_DIR & ~os.O_NOFOLLOW)  # /proc/<pid>/root is itself a magic link
    try:
        for n, part in enumerate(parts):
            last = n == len(parts) - 1
            flags = OPEN_FILE if last and not directory else OPEN_DIR
            try:
                child = os.open(part, flags, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(fd, part):
                    raise LinkInPathError(
                        errno.ELOOP, f"{container_path}: /{'/'.join(parts[:n + 1])} is a link, "
                        "which LocalEnvironment never follows out of a trial") from None
                raise
            os.close(fd)
            fd = child
        return fd
    except BaseException:
        os.close(fd)
        raise


def _is_link(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def copy_file_out(view: str, container_path: str, target: Path) -> None:
    """One regular file out of the trial (no link on its path), replacing `target`."""
    fd = open_inside(view, container_path, directory=False)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise FileNotFoundError(f"{container_path} is not a regular file in the environment")
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.localenv-partial")
        partial.unlink(missing_ok=True)
        out = os.open(partial, CREATE_FILE, 0o644)
        try:
            _copy_bytes(fd, out, os.fstat(fd).st_size)
        finally:
            os.close(out)
        partial.replace(target)
    finally:
        os.close(fd)


def copy_tree_out(view: str, container_path: str, target: Path, *, max_depth: int,
                  max_entries: int) -> CopyReport:
    """Every folder and regular file under `container_path` into `target` (made if missing),
    links and special files left out, bounded in depth and number of entries."""
    report = CopyReport(source=container_path)
    root_fd = open_inside(view, container_path, directory=True)
    target.mkdir(parents=True, exist_ok=True)
    stack: list[tuple[int, Path, str, int]] = [(root_fd, target, container_path.rstrip("/"), 0)]
    entries = 0
    try:
        while stack:
            fd, out_dir, where, depth = stack.pop()
            try:
                names = sorted(os.listdir(fd))
            except OSError:
                names = []
            for name in names:
                inside = f"{where}/{name}"
                if entries >= max_entries:
                    report.leave_out(inside, "too many entries")
                    continue
                entries += 1
                try:
                    info = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:
                    report.leave_out(inside, "vanished")
                    continue
                if stat.S_ISDIR(info.st_mode):
                    if depth + 1 > max_depth:
                        report.leave_out(inside, "too deep")
                        continue
                    try:
                        child = os.open(name, OPEN_DIR, dir_fd=fd)
                    except OSError:  # swapped for a link or removed since listed
                        report.leave_out(inside, "link")
                        continue
                    (out_dir / name).mkdir(exist_ok=True)
                    stack.append((child, out_dir / name, inside, depth + 1))
                elif stat.S_ISREG(info.st_mode):
                    _copy_entry(fd, name, out_dir / name, inside, report)
                else:
                    report.leave_out(inside, "link" if stat.S_ISLNK(info.st_mode)
                                     else "special file")
            os.close(fd)
    finally:
        for fd, *_ in stack:
            os.close(fd)
    return report


def _copy_entry(dir_fd: int, name: str, target: Path, inside: str, report: CopyReport) -> None:
    try:
        fd = os.open(name, OPEN_FILE, dir_fd=dir_fd)
    except OSError:
        report.leave_out(inside, "link")
        return
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            report.leave_out(inside, "special file")
            return
        parsed = name in HOST_PARSED
        written = target.with_name(f".{target.name}.localenv-check") if parsed else target
        if parsed and target.exists():
            report.keep_host_file(inside)
            return
        try:
            out = os.open(written, CREATE_FILE, 0o644)
        except FileExistsError:
            report.keep_host_file(inside)
            return
        try:
            report.bytes += _copy_bytes(fd, out, info.st_size)
        finally:
            os.close(out)
        report.files += 1
        if parsed:
            _place_parsed(written, target, inside, report)
    finally:
        os.close(fd)


def parse_problem(path: Path) -> str | None:
    """Why Harbor could not parse the file at `path` safely, or None: it must be UTF-8 JSON
    of at most MAX_PARSED_BYTES."""
    size = path.stat().st_size
    if size > MAX_PARSED_BYTES:
        return f"{size} bytes, more than {MAX_PARSED_BYTES}"
    try:
        json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as exc:
        return f"not UTF-8 ({exc.reason} at byte {exc.start})"
    except (ValueError, RecursionError) as exc:
        return f"not JSON ({str(exc)[:80]})"
    return None


def _place_parsed(written: Path, target: Path, inside: str, report: CopyReport) -> None:
    """Give a copied file a name Harbor parses only when Harbor can parse it."""
    problem = parse_problem(written)
    if problem is None:
        try:
            os.link(written, target)  # fails, never replaces, if the name was taken meanwhile
        except FileExistsError:
            report.keep_host_file(inside)
        written.unlink()
        return
    kept: Path | None = target.with_name(target.name + REJECTED_SUFFIX)
    try:
        os.link(written, kept)
    except FileExistsError:
        kept = None
    written.unlink()
    report.rejected.append(Rejected(path=inside, kept_as=kept.name if kept else None,
                                    why=problem))


def _copy_bytes(source: int, target: int, size: int) -> int:
    """At most `size` bytes (the size when opened: a file that grows adds nothing)."""
    done = 0
    while done < size:
        chunk = os.read(source, min(CHUNK, size - done))
        if not chunk:
            break
        os.write(target, chunk)
        done += len(chunk)
    return done
