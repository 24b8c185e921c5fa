"""A `bankbench sweep` on the mocker stack started as a user starts it, to be stopped: killed,
interrupted or terminated mid-level (tests/reliability/test_sweep_interruption.py,
test_sweep_stop.py)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support.built_tasks import CHEAP_LABELS
from tests.support.cli import HARBOR_ENV, processes_mentioning

N_TASKS, ATTEMPTS = 3, 2


def sweep_cmd(out: Path, levels: str, name: str = "s", *more: str) -> list[str]:
    return [sys.executable, "-m", "bankbench", "sweep", "--profile", "cpu-mocker",
            "--set", "speedup_ratio=10", "--levels", levels, "--attempts", str(ATTEMPTS),
            "--source", "sample", "--labels", CHEAP_LABELS, "--limit", str(N_TASKS),
            "--out", str(out), "--name", name, *more]


def start_sweep(out: Path, levels: str, sigint_ignored: bool = False
                ) -> tuple[subprocess.Popen, Path]:
    cmd = sweep_cmd(out, levels)
    log = (out / "sweep.out").open("w")
    # sigint_ignored: started the way a shell script starts a background job (`cmd &`), which
    # runs it with SIGINT ignored.
    ignore = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if sigint_ignored else None
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, **HARBOR_ENV}, preexec_fn=ignore)
    return proc, out / "s"


def finished(job: Path) -> dict[str, str]:
    """trial folder name -> sha256 of its result.json, for trials that finished. Harbor writes
    result.json in place (not through a rename), so a file read while it is being written is
    empty or cut: only a whole result with its end time counts."""
    if not job.is_dir():
        return {}
    done = {}
    for trial in job.iterdir():
        try:
            raw = (trial / "result.json").read_bytes()
            complete = json.loads(raw).get("finished_at") is not None
        except (OSError, ValueError, AttributeError):
            continue
        if complete:
            done[trial.name] = hashlib.sha256(raw).hexdigest()
    return done


def no_leftovers(marker: str, wait_s: float = 30) -> list[str]:
    deadline = time.monotonic() + wait_s
    while (left := processes_mentioning(marker)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return left


def assert_stopped_cleanly(proc, sweep: Path, log: Path, tmp_path: Path,
                           code: int = 128 + signal.SIGINT) -> None:
    """Exit 128 + the signal, the resume command said, the sweep's server stopped, nothing
    left behind."""
    assert proc.wait(timeout=120) == code
    out = log.read_text()
    assert f"bankbench sweep --resume {sweep}" in out
    assert "stopping the server this sweep started" in out
    assert not (sweep / "server" / "state.json").exists()
    assert no_leftovers(str(tmp_path), wait_s=10) == []
