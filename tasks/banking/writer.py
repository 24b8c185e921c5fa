"""Write one task directory atomically, and only when its content changed.

A task is a map of relative path -> (bytes, mode). When the directory on disk already holds
exactly those files, nothing is touched (so a rebuild is byte-identical and keeps mtimes);
otherwise the new tree is written beside it and swapped in with renames, so a reader never
sees half a task. Only directories that are bankbench tasks (or empty) are ever replaced.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from contracts.task import metadata_table

TaskFiles = dict[str, tuple[bytes, int]]
TASK_DIR = re.compile(r"^[a-z]+-\d{3,}$")


class WriteError(Exception):
    pass


def read_tree(root: Path) -> TaskFiles:
    """Every file under root as relative posix path -> (bytes, permission bits)."""
    files: TaskFiles = {}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            mode = path.stat().st_mode & 0o777
            files[path.relative_to(root).as_posix()] = (path.read_bytes(), mode)
    return files


def task_scenario_id(directory: Path) -> str | None:
    """The scenario id a bankbench task dir records in task.toml; None if it is not one."""
    scenario = (metadata_table(directory) or {}).get("scenario_id")
    return str(scenario) if scenario is not None else None


def write_task(directory: Path, files: TaskFiles) -> bool:
    """Make `directory` hold exactly `files`. Returns True when anything changed."""
    if directory.exists():
        if read_tree(directory) == files:
            return False
        empty = not any(directory.iterdir())
        if not empty and task_scenario_id(directory) != directory.name:
            raise WriteError(
                f"{directory}: exists and is not a bankbench task for {directory.name}; "
                "move it away or choose another --out"
            )
    staging = directory.with_name(f".{directory.name}.new")
    retired = directory.with_name(f".{directory.name}.old")
    for leftover in (staging, retired):
        if leftover.exists():
            shutil.rmtree(leftover)
    for rel, (data, mode) in sorted(files.items()):
        path = staging / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        os.chmod(path, mode)
    if directory.exists():
        directory.rename(retired)
    staging.rename(directory)
    if retired.exists():
        shutil.rmtree(retired)
    return True


def task_dirs(out: Path, domain: str) -> list[Path]:
    """Existing bankbench task directories of `domain` under out."""
    if not out.is_dir():
        return []
    return sorted(
        p
        for p in out.iterdir()
        if p.is_dir()
        and TASK_DIR.match(p.name)
        and p.name.startswith(f"{domain}-")
        and task_scenario_id(p) == p.name
    )
