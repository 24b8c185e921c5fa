"""Sample tasks for tests that are not about labelling.

Labelling is the costly part of a build (the default method runs a sentence encoder); a test
that needs runnable tasks but asserts nothing about how their expected tools were chosen takes
them labelled from the sample's checked-in per-goal gold file instead: the same kind of labels
(per goal, with alternatives and no-tool goals), read in milliseconds. Tests about labelling
call `build_tasks` with the method they test.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tasks.banking.sample import GOLD_GOALS_PATH

# `--labels` for builds whose labels are not what the test is about.
CHEAP_LABELS = f"file:{GOLD_GOALS_PATH}"
BIN = Path(sys.executable).parent


def build_sample(out: Path, **options: Any) -> Path:
    """`build_tasks("sample", out, ...)` with the cheap labels and no progress lines; any
    other option (scenarios, limit, mode, max_turns) passes through."""
    from tasks.banking.build import build_tasks

    options.setdefault("labels", CHEAP_LABELS)
    options.setdefault("log", lambda line: None)
    build_tasks("sample", out, **options)
    return out


def build_sample_cli(out: Path, *args: str, timeout: int = 300) -> Path:
    """`bankbench tasks build --source sample --out OUT ARGS...` as a user runs it, with the
    cheap labels unless ARGS name others; fails with the command's stderr."""
    labels = [] if "--labels" in args else ["--labels", CHEAP_LABELS]
    done = subprocess.run(
        [str(BIN / "bankbench"), "tasks", "build", "--source", "sample", "--out", str(out),
         *labels, *args], capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def copy_tasks(built: Path, dest: Path, scenarios: list[str] | None = None) -> Path:
    """Copies of some built task folders (all when `scenarios` is None) under `dest`, so a
    test may run or change them without touching the session's build."""
    dest.mkdir(parents=True, exist_ok=True)
    names = scenarios if scenarios is not None else sorted(
        p.name for p in built.iterdir() if (p / "task.toml").is_file())
    for name in names:
        shutil.copytree(built / name, dest / name, symlinks=True)
    return dest


def empty_tasks(root: Path, n: int) -> Path:
    """`n` task folders banking-000 ... under root/tasks with an empty task.toml: enough for
    code that plans from task names (sweep levels, shards) and never runs them."""
    tasks = root / "tasks"
    for i in range(n):
        (tasks / f"banking-{i:03d}").mkdir(parents=True)
        (tasks / f"banking-{i:03d}" / "task.toml").write_text("")
    return tasks
