"""Interrupting a sweep: stopped with SIGINT (Ctrl-C, or `kill -INT` when started in the
background of a script, SIGINT ignored), it exits 130, says how to resume and brings down the
server it started; resumed, and that run killed outright (SIGKILL) mid-level and resumed again,
no finished trial is lost or duplicated, the result is a clean run's, and nothing keeps running.
One sweep goes through both stops. (SIGTERM, and how a resumed level is measured:
test_sweep_stop.py.)

Real parts throughout: `bankbench sweep` as a subprocess, the real harbor CLI, LocalEnvironment,
the real Dynamo frontend with the mocker engine (cpu-mocker)."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.support.cli import HARBOR_ENV, bankbench_here, wait_for
from tests.support.interrupted_sweep import (
    ATTEMPTS,
    N_TASKS,
    assert_stopped_cleanly,
    finished,
    no_leftovers,
    start_sweep,
)

pytestmark = [pytest.mark.dynamo, pytest.mark.harbor, pytest.mark.slow]


def _assert_like_a_clean_run(sweep: Path, before: dict[str, dict[str, str]]) -> None:
    per_level = N_TASKS * ATTEMPTS
    tasks = sorted(p.name for p in (sweep / "tasks").iterdir() if (p / "task.toml").exists())
    assert len(tasks) == N_TASKS
    clean_run = Counter({task: ATTEMPTS for task in tasks})  # what an uninterrupted level holds
    for level in ("c1", "c2"):
        after = finished(sweep / level)
        # every trial that had finished before the interruption is there, byte for byte
        assert {name: after.get(name) for name in before[level]} == before[level]
        # task x attempt: exactly a clean run's set, nothing twice, nothing missing
        assert Counter(name.split("__")[0] for name in after) == clean_run
        # and no half-finished trial folder left behind
        trial_dirs = [p for p in (sweep / level).iterdir() if (p / "config.json").exists()]
        assert len(trial_dirs) == len(after)

    manifest = json.loads((sweep / "sweep.json").read_text())
    assert [r["state"] for r in manifest["level_records"]] == ["complete", "complete"]
    assert manifest["finished_at"] is not None
    # the report counts each trial once, and none as broken or still running
    with (sweep / "trials.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert Counter(r["level"] for r in rows) == {"1": per_level, "2": per_level}
    assert not {r["status"] for r in rows} & {"harness_failed", "interrupted", "running"}
    assert (sweep / "report.md").exists()


@pytest.fixture(scope="module")
def stopped(tmp_path_factory) -> tuple[Path, dict[str, dict[str, str]]]:
    """A sweep started as `bankbench sweep … &` in a script starts it (SIGINT ignored, which
    Python and Harbor would keep) and sent `kill -INT` in level 1: the sweep's own handler is
    what stops it, at a terminal too. Both tests continue this one sweep: the Ctrl-C test reads
    the stop, the SIGKILL test resumes it, kills the resumed run mid level 2, resumes again."""
    out = tmp_path_factory.mktemp("interrupted")
    proc, sweep = start_sweep(out, "1,2", sigint_ignored=True)
    log = out / "sweep.out"
    wait_for(lambda: len(finished(sweep / "c1")) >= 2, proc, log)
    before = {"c1": finished(sweep / "c1"), "c2": {}}
    proc.send_signal(signal.SIGINT)  # what Ctrl-C delivers to the foreground process
    assert_stopped_cleanly(proc, sweep, log, out)
    return sweep, before


def test_sigint_stops_cleanly_and_says_how_to_resume(stopped):
    sweep, before = stopped
    # Stopping never throws away what finished, and the sweep continues where it stopped.
    assert finished(sweep / "c1").items() >= before["c1"].items() and len(before["c1"]) >= 2
    manifest = json.loads((sweep / "sweep.json").read_text())
    assert manifest["finished_at"] is None
    # the level it stopped is recorded as such, not left `running`
    assert manifest["level_records"][0]["state"] == "interrupted"


def test_sigkill_mid_level_then_resume_loses_and_duplicates_nothing(stopped):
    """The stopped sweep resumed (level 1 finished, level 2 started), that run killed outright
    mid level 2, and resumed again: a clean run's trials, every one that had finished kept."""
    sweep, stopped_at = stopped
    log = sweep.parent / "resume.out"
    proc = subprocess.Popen([sys.executable, "-m", "bankbench", "sweep", "--resume", str(sweep)],
                            stdout=log.open("w"), stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, **HARBOR_ENV})
    per_level = N_TASKS * ATTEMPTS
    wait_for(lambda: 2 <= len(finished(sweep / "c2")) < per_level, proc, log)
    # Trials that ended before the kill (Harbor also records the ones it cancels on its way
    # down; those are not finished trials and must be run again).
    before = {level: finished(sweep / level) for level in ("c1", "c2")}
    proc.kill()  # SIGKILL: no handler runs, no cleanup
    proc.wait()
    assert len(before["c1"]) == per_level and 2 <= len(before["c2"]) < per_level
    assert before["c1"].items() >= stopped_at["c1"].items()  # the Ctrl-C stop lost nothing

    done = bankbench_here("sweep", "--resume", str(sweep), "--no-plots")  # read by what it writes
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "level 1: already complete, skipped" in done.stdout
    assert "level 2: resuming" in done.stdout
    assert "left running by the interrupted sweep" in done.stdout
    _assert_like_a_clean_run(sweep, before)

    assert no_leftovers(str(sweep.parent)) == []
