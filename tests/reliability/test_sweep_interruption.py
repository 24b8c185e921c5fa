"""Interrupting a sweep: killed outright (SIGKILL) mid-level and resumed, no finished trial is
lost or duplicated and nothing keeps running; stopped with Ctrl-C (SIGINT), it exits 130, says
how to resume and brings down the server it started.

Real parts throughout: `bankbench sweep` as a subprocess, the real harbor CLI, LocalEnvironment,
the real Dynamo frontend with the mocker engine (cpu-mocker)."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.support.built_tasks import CHEAP_LABELS
from tests.support.cli import HARBOR_ENV, bankbench, processes_mentioning, wait_for

pytestmark = [pytest.mark.dynamo, pytest.mark.harbor, pytest.mark.slow]

N_TASKS, ATTEMPTS = 5, 2


def _sweep_cmd(out: Path, levels: str, name: str = "s", *more: str) -> list[str]:
    return [sys.executable, "-m", "bankbench", "sweep", "--profile", "cpu-mocker",
            "--set", "speedup_ratio=10", "--levels", levels, "--attempts", str(ATTEMPTS),
            "--source", "sample", "--labels", CHEAP_LABELS, "--limit", str(N_TASKS),
            "--out", str(out), "--name", name, *more]


def _start_sweep(out: Path, levels: str, sigint_ignored: bool = False
                 ) -> tuple[subprocess.Popen, Path]:
    cmd = _sweep_cmd(out, levels)
    log = (out / "sweep.out").open("w")
    # sigint_ignored: started the way a shell script starts a background job (`cmd &`), which
    # runs it with SIGINT ignored.
    ignore = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if sigint_ignored else None
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, **HARBOR_ENV}, preexec_fn=ignore)
    return proc, out / "s"


def _finished(job: Path) -> dict[str, str]:
    """trial folder name -> sha256 of its result.json, for trials that finished."""
    if not job.is_dir():
        return {}
    return {p.name: hashlib.sha256((p / "result.json").read_bytes()).hexdigest()
            for p in job.iterdir() if (p / "result.json").is_file()}


def _no_leftovers(marker: str, wait_s: float = 30) -> list[str]:
    deadline = time.monotonic() + wait_s
    while (left := processes_mentioning(marker)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return left


def _assert_like_a_clean_run(sweep: Path, before: dict[str, dict[str, str]]) -> None:
    per_level = N_TASKS * ATTEMPTS
    tasks = sorted(p.name for p in (sweep / "tasks").iterdir() if (p / "task.toml").exists())
    assert len(tasks) == N_TASKS
    clean_run = Counter({task: ATTEMPTS for task in tasks})  # what an uninterrupted level holds
    for level in ("c1", "c4"):
        after = _finished(sweep / level)
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
    assert Counter(r["level"] for r in rows) == {"1": per_level, "4": per_level}
    assert not {r["status"] for r in rows} & {"harness_failed", "interrupted", "running"}
    assert (sweep / "report.md").exists()


def test_sigkill_mid_level_then_resume_loses_and_duplicates_nothing(tmp_path):
    proc, sweep = _start_sweep(tmp_path, "1,4")
    log = tmp_path / "sweep.out"
    per_level = N_TASKS * ATTEMPTS
    wait_for(lambda: 2 <= len(_finished(sweep / "c4")) < per_level, proc, log)
    # Trials that ended before the kill (Harbor also records the ones it cancels on its way
    # down; those are not finished trials and must be run again).
    before = {level: _finished(sweep / level) for level in ("c1", "c4")}
    proc.kill()  # SIGKILL: no handler runs, no cleanup
    proc.wait()
    assert len(before["c1"]) == per_level and 2 <= len(before["c4"]) < per_level

    done = bankbench("sweep", "--resume", str(sweep), timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "level 1: already complete, skipped" in done.stdout
    assert "level 4: resuming" in done.stdout
    assert "left running by the interrupted sweep" in done.stdout
    _assert_like_a_clean_run(sweep, before)

    assert _no_leftovers(str(tmp_path)) == []


def _assert_stopped_cleanly(proc, sweep: Path, log: Path, tmp_path: Path,
                            code: int = 128 + signal.SIGINT) -> None:
    """Exit 128 + the signal, the resume command said, the sweep's server stopped, nothing
    left behind."""
    assert proc.wait(timeout=120) == code
    out = log.read_text()
    assert f"bankbench sweep --resume {sweep}" in out
    assert "stopping the server this sweep started" in out
    assert not (sweep / "server" / "state.json").exists()
    assert _no_leftovers(str(tmp_path), wait_s=10) == []


def test_sigint_stops_cleanly_and_says_how_to_resume(tmp_path):
    proc, sweep = _start_sweep(tmp_path, "1,4")
    log = tmp_path / "sweep.out"
    wait_for(lambda: len(_finished(sweep / "c1")) >= 2, proc, log)
    before = {"c1": _finished(sweep / "c1"), "c4": {}}
    proc.send_signal(signal.SIGINT)  # what Ctrl-C delivers to the foreground process
    _assert_stopped_cleanly(proc, sweep, log, tmp_path)
    # Stopping never throws away what finished, and the sweep continues where it stopped.
    assert len(_finished(sweep / "c1")) >= 1
    manifest = json.loads((sweep / "sweep.json").read_text())
    assert manifest["finished_at"] is None
    # the level it stopped is recorded as such, not left `running`
    assert manifest["level_records"][0]["state"] == "interrupted"
    done = bankbench("sweep", "--resume", str(sweep), timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    _assert_like_a_clean_run(sweep, before)
    assert _no_leftovers(str(tmp_path)) == []


def test_sigint_stops_a_sweep_started_in_the_background_of_a_script(tmp_path):
    """`bankbench sweep … &` in a script inherits an ignored SIGINT; `kill -INT` still stops it,
    and Harbor (which would inherit the ignored SIGINT too) goes down with it promptly."""
    proc, sweep = _start_sweep(tmp_path, "1", sigint_ignored=True)
    log = tmp_path / "sweep.out"
    wait_for(lambda: len(_finished(sweep / "c1")) >= 1, proc, log)
    proc.send_signal(signal.SIGINT)
    _assert_stopped_cleanly(proc, sweep, log, tmp_path)


def test_sigterm_stops_like_ctrl_c(tmp_path):
    proc, sweep = _start_sweep(tmp_path, "1")
    log = tmp_path / "sweep.out"
    wait_for(lambda: len(_finished(sweep / "c1")) >= 1, proc, log)
    proc.terminate()  # `kill PID`, as a service manager or CI runner stops a job
    _assert_stopped_cleanly(proc, sweep, log, tmp_path, code=128 + signal.SIGTERM)


def _summary_row(sweep: Path) -> dict[str, str]:
    with (sweep / "summary.csv").open() as fh:
        [row] = list(csv.DictReader(fh))
    return row


def test_a_resumed_level_reports_the_throughput_of_the_level_run_straight(tmp_path):
    """The same steady level (c2, 12 trials through 2 slots) run straight, and run with a
    Ctrl-C in its middle, a 20 s pause and `--resume`: the resumed level's output rate and
    achieved concurrency are over the runs it ran in (each cut at warm-up and drain, the
    stopped one where it was stopped), so they agree with the straight run's within 20 %; over
    first start to last end, as before, the pause would have counted. Both figures printed."""
    steady = ("--steady", "3", "--limit", "6")  # 6 tasks x 2 attempts = 12 trials >= 3 x 2
    straight = bankbench(*_sweep_cmd(tmp_path, "2", "straight", *steady)[3:], timeout=900)
    assert straight.returncode == 0, straight.stdout[-3000:] + straight.stderr[-3000:]
    log = tmp_path / "sweep.out"
    proc = subprocess.Popen(_sweep_cmd(tmp_path, "2", "paused", *steady),
                            stdout=log.open("w"), stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, **HARBOR_ENV})
    sweep = tmp_path / "paused"
    wait_for(lambda: len(_finished(sweep / "c2")) >= 5, proc, log)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=120) == 128 + signal.SIGINT, log.read_text()[-3000:]
    time.sleep(20)  # the pause: no trial runs
    done = bankbench("sweep", "--resume", str(sweep), timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    a, b = _summary_row(tmp_path / "straight"), _summary_row(sweep)
    manifest = json.loads((sweep / "sweep.json").read_text())
    [record] = manifest["level_records"]
    print(f"\nc2 straight: {float(a['output_token_throughput']):.1f} tok/s, "
          f"{float(a['achieved_trial_concurrency']):.2f} trials running over "
          f"{float(a['window_s']):.1f} s; interrupted + resumed: "
          f"{float(b['output_token_throughput']):.1f} tok/s, "
          f"{float(b['achieved_trial_concurrency']):.2f} over {float(b['window_s']):.1f} s "
          f"({len(record['runs'])} runs)")
    assert record["resumed"] and len(record["runs"]) == 2 and record["runs"][0]["cut_at"]
    assert b["resumed"] == "True" and b["steady"] == "True" and a["steady"] == "True"
    for key in ("output_token_throughput", "achieved_trial_concurrency"):
        assert abs(float(b[key]) / float(a[key]) - 1) <= 0.20, (key, a[key], b[key])
    # the report marks it resumed: throughput table, columns source, level, window, steady,
    # resumed
    report = (sweep / "report.md").read_text()
    table = report[report.index("## Throughput and concurrency"):]
    row = next(line for line in table.splitlines() if line.startswith("| paused | 2 |"))
    assert row.split("|")[4:6] == [" yes ", " yes "], row
