"""`bankbench agent-server` refuses bad start-up input with one line, before it listens."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.built_tasks import copy_tasks
from tests.support.cli import bankbench_here


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bankbench", "agent-server", *args],
                          capture_output=True, text=True, timeout=60)


def run_here(*args: str) -> subprocess.CompletedProcess:
    """The same refusal in this process: no Python start-up and CLI imports per case (each
    test below still runs its first case as a process: exit code, no traceback)."""
    return bankbench_here("agent-server", *args)


@pytest.fixture(scope="module")
def tasks(sample_tasks_all: Path, tmp_path_factory) -> Path:
    return copy_tasks(sample_tasks_all, tmp_path_factory.mktemp("tasks"), ["banking-000"])


@pytest.mark.parametrize(("extra", "message"), [
    (["--ak", "no_such_option=1"], "unknown option --ak no_such_option"),
    (["--ak", "max_steps=0"], "--ak max_steps:"),
    (["--ak", "oops"], "expected key=value"),
    (["--max-concurrency", "0"], "greater than or equal to 1"),
])
def test_bad_options_fail_with_one_line(tasks: Path, extra, message):
    done = (run if extra[0] == "--ak" and extra[1].startswith("no_such") else run_here)(
        "--tasks", str(tasks), "-m", "m", *extra)
    assert done.returncode == 2
    # one error line (argparse's own errors come after its usage lines)
    said = [line for line in done.stderr.splitlines() if line.startswith("bankbench")]
    assert len(said) == 1 and message in said[0], done.stderr


def test_no_model_and_no_tasks_are_refused(tasks: Path, tmp_path: Path):
    done = run("--tasks", str(tasks))
    assert done.returncode == 2 and "no model" in done.stderr
    done = run_here("--tasks", str(tmp_path / "missing"), "-m", "m")
    assert done.returncode == 2 and "is not a folder" in done.stderr
    done = run_here("--tasks", str(tmp_path), "-m", "m")
    assert done.returncode == 2 and "holds no task" in done.stderr
