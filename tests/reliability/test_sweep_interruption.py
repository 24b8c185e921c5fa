"""Interrupting a sweep: killed outright (SIGKILL) mid-level and resumed, no finished trial is
lost or duplicated and nothing keeps running; stopped with SIGINT (Ctrl-C, or `kill -INT` when
started in the background of a script, SIGINT ignored), it exits 130, says how to resume, brings
down the server it started, and resumes to a clean run. (SIGTERM, and how a resumed level is
measured: test_sweep_stop.py.)

Real parts throughout: `bankbench sweep` as a subprocess, the real harbor CLI, LocalEnvironment,
the real Dynamo frontend with the mocker engine (cpu-mocker)."""

from __future__ import annotations

import csv
import json
import signal
from collections import Counter
from pathlib import Path

import pytest

from tests.support.cli import bankbench, wait_for
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


def test_sigkill_mid_level_then_resume_loses_and_duplicates_nothing(tmp_path):
    proc, sweep = start_sweep(tmp_path, "1,2")
    log = tmp_path / "sweep.out"
    per_level = N_TASKS * ATTEMPTS
    wait_for(lambda: 2 <= len(finished(sweep / "c2")) < per_level, proc, log)
    # Trials that ended before the kill (Harbor also records the ones it cancels on its way
    # down; those are not finished trials and must be run again).
    before = {level: finished(sweep / level) for level in ("c1", "c2")}
    proc.kill()  # SIGKILL: no handler runs, no cleanup
    proc.wait()
    assert len(before["c1"]) == per_level and 2 <= len(before["c2"]) < per_level

    done = bankbench("sweep", "--resume", str(sweep), timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "level 1: already complete, skipped" in done.stdout
    assert "level 2: resuming" in done.stdout
    assert "left running by the interrupted sweep" in done.stdout
    _assert_like_a_clean_run(sweep, before)

    assert no_leftovers(str(tmp_path)) == []


def test_sigint_stops_cleanly_and_says_how_to_resume(tmp_path):
    """Started as `bankbench sweep … &` in a script starts it (SIGINT ignored, which Python and
    Harbor would keep), `kill -INT` still stops it and Harbor with it: the sweep's own handler
    is what stops it, at a terminal too."""
    proc, sweep = start_sweep(tmp_path, "1,2", sigint_ignored=True)
    log = tmp_path / "sweep.out"
    wait_for(lambda: len(finished(sweep / "c1")) >= 2, proc, log)
    before = {"c1": finished(sweep / "c1"), "c2": {}}
    proc.send_signal(signal.SIGINT)  # what Ctrl-C delivers to the foreground process
    assert_stopped_cleanly(proc, sweep, log, tmp_path)
    # Stopping never throws away what finished, and the sweep continues where it stopped.
    assert len(finished(sweep / "c1")) >= 1
    manifest = json.loads((sweep / "sweep.json").read_text())
    assert manifest["finished_at"] is None
    # the level it stopped is recorded as such, not left `running`
    assert manifest["level_records"][0]["state"] == "interrupted"
    done = bankbench("sweep", "--resume", str(sweep), timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    _assert_like_a_clean_run(sweep, before)
    assert no_leftovers(str(tmp_path)) == []
