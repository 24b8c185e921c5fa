"""A sweep's directory over its life: locked while it runs (a second sweep or a resume aimed at
it is refused at once, and nothing merges), default names that never collide, refused runs that
leave nothing behind, and a server that dies mid-sweep: the sweep stops after a bounded re-check,
says why, exits non-zero, and resumes once the server is back, here on another port. (A profile
sweep resumed on another port with --port: test_source_fallback.py.)

Real parts: `bankbench sweep` as the user runs it, the real harbor CLI, LocalEnvironment, the
real Dynamo frontend with the mocker engine."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.support.built_tasks import CHEAP_LABELS
from tests.support.cli import (
    HARBOR_ENV,
    assert_one_line_error,
    bankbench_here,
    wait_for,
)
from tests.support.interrupted_sweep import finished

pytestmark = [pytest.mark.dynamo, pytest.mark.harbor, pytest.mark.slow]

N_TASKS = 3


def _stack(state_dir: Path):
    from bankbench.serve import api

    return api.up("cpu-mocker", state_dir=state_dir, options={"speedup_ratio": 10.0})


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """One server for the tests that only need one to aim sweeps at."""
    from bankbench.serve import api

    state = _stack(tmp_path_factory.mktemp("stack"))
    yield state
    api.down(state)


def _sweep_args(state, out: Path, *more: str) -> list[str]:
    return ["sweep", "--base-url", state.base_url, "--model", state.model, "--source", "sample",
            "--labels", CHEAP_LABELS, "--limit", str(N_TASKS), "--out", str(out), "--no-plots",
            *more]


def _start(args: list[str], log: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "bankbench", *args],
                            stdout=log.open("w"), stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, **HARBOR_ENV})


def _finished(job: Path) -> list[Path]:
    return [job / name for name in finished(job)]


def test_default_names_of_the_same_second_never_collide(tmp_path, stack, monkeypatch):
    from bankbench.cli import main
    from bankbench.commands import sweep as sweep_cmd

    class Frozen(datetime):
        @classmethod
        def now(cls, tz=None):
            return datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)

    monkeypatch.setattr(sweep_cmd, "datetime", Frozen)
    for k, v in HARBOR_ENV.items():
        monkeypatch.setenv(k, v)
    out = tmp_path / "jobs"
    args = ["sweep", "--base-url", stack.base_url, "--model", stack.model, "--source",
            "sample", "--labels", CHEAP_LABELS, "--limit", "1", "--levels", "1", "--out", str(out),
            "--no-plots"]
    assert main(args) == 0
    assert main(args) == 0
    assert sorted(p.name for p in out.iterdir()) == ["sweep-20260102-030405",
                                                     "sweep-20260102-030405-2"]
    for d in out.iterdir():
        assert len(_finished(d / "c1")) == 1
        # --no-plots: the report and its data without figures (drawn by default:
        # tests/reliability/test_secret_absence.py)
        assert (d / "report.md").is_file() and (d / "summary.csv").is_file()
        assert not (d / "plots").exists() and not list(d.rglob("*.png"))


def test_bad_options_are_one_line_before_anything_slow_and_leave_no_directory(tmp_path):
    out = tmp_path / "jobs"
    cases = [("--labels", f"file:{tmp_path / 'missing.json'}", "cannot read"),
             ("--labels", "nope", "expected one of"),
             ("--source", str(tmp_path / "nonexistent"), "no such directory"),
             ("--ak", "tool_mod=text", "did you mean --ak tool_mode?")]
    for option, value, why in cases:
        done = bankbench_here("sweep", "--profile", "cpu-mocker", option, value, "--out",
                              str(out), "--name", "x")
        assert_one_line_error(done, value.split("=")[0], why)
        assert done.returncode == 2  # a usage error, as argparse's own
        # refused before anything slow: no task built, no server started
        assert "building tasks" not in done.stdout and "starting server" not in done.stdout
        assert not (out / "x").exists()


def _refusals_while_it_runs(first: subprocess.Popen, state, out: Path, sweep: Path) -> None:
    """A resume and a second sweep of the same name, aimed at a live sweep, are refused at once.
    The sweep is held still (SIGSTOP: alive, its claim on the sweep kept) while they run, so
    a quick sweep on an idle machine cannot end before they are tested. They run in this
    process (the claim is the sweep process's, a pid this one is not): what they say and
    their exit code are the command's, without two CLI start-ups while the sweep stands."""
    first.send_signal(signal.SIGSTOP)
    try:
        resumed = bankbench_here("sweep", "--resume", str(sweep))
        again = bankbench_here(*_sweep_args(state, out, "--levels", "1", "--name", sweep.name))
        assert first.poll() is None, "the first sweep ended before the refusals were tested"
    finally:
        first.send_signal(signal.SIGCONT)
    for done in (resumed, again):
        line = assert_one_line_error(done, str(sweep), "in use by a running sweep",
                                     f"pid {first.pid}")
        assert "--resume" not in line  # nothing that would write into the live sweep
    assert "choose another --name" in again.stderr


def test_a_server_that_dies_stops_the_sweep_which_resumes_on_a_new_port(tmp_path, stack):
    """One sweep's life: refusals while it runs, its server lost mid-level, the stop, and the
    resume on another port that completes every level with each task once (nothing merged).
    The server it comes back to is the module's (another stack, another port)."""
    from analysis.status import trial_status
    from bankbench.serve import api

    old = _stack(tmp_path / "stack")
    out = tmp_path / "jobs"
    log = tmp_path / "sweep.log"
    try:
        proc = _start(_sweep_args(old, out, "--levels", "1,2", "--name", "s"), log)
        sweep = out / "s"
        wait_for(lambda: (sweep / "sweep.json").exists(), proc, log, timeout=240)
        _refusals_while_it_runs(proc, old, out, sweep)
        wait_for(lambda: len(_finished(sweep / "c1")) >= 1, proc, log, timeout=240)
    finally:
        api.down(old)
    t_dead = time.monotonic()
    code = proc.wait(timeout=180)
    took = time.monotonic() - t_dead
    text = log.read_text()
    assert code == 1, text[-3000:]
    assert took < 90, f"took {took:.0f} s to notice"
    assert "stopped answering" in text and f"--resume {sweep}" in text
    assert "--base-url NEW_URL" in text
    manifest = json.loads((sweep / "sweep.json").read_text())
    states = [r["state"] for r in manifest["level_records"]]
    # It stopped at the level the server was lost in (Harbor may have finished that level just
    # before: then the next one is refused before it starts); no later level ran.
    assert states in (["failed", "pending"], ["complete", "pending"]), states
    if states[0] == "complete":
        assert "level 2: the server stopped answering" in text
    assert not (sweep / "c2").exists()

    new = stack  # back, at another port
    assert new.base_url != old.base_url
    # in this process: read by what it prints and writes
    done = bankbench_here("sweep", "--resume", str(sweep), "--base-url", new.base_url,
                          "--no-plots")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"resuming against {new.base_url}" in done.stdout
    manifest = json.loads((sweep / "sweep.json").read_text())
    assert manifest["base_url"] == new.base_url
    assert manifest["earlier_base_urls"] == [old.base_url]
    for level in ("c1", "c2"):
        trials = _finished(sweep / level)
        assert Counter(p.name.split("__")[0] for p in trials) == Counter(
            {f"banking-{i:03d}": 1 for i in range(N_TASKS)}), level  # each task once
        # the trials the outage failed ran again: none is left as an infra failure
        assert [trial_status(t)[0] for t in trials].count("infra_failed") == 0
