"""`bankbench serve status` / `down` without --state-dir while other stacks run on the machine:
a running sweep's own stack is never the one meant, and status shows every stack rather than
asking which."""

from __future__ import annotations

import os
import time

from bankbench.procs import group_alive, start, start_time
from bankbench.serve.state import known_state_dirs
from tests.support.serve_state import record_stack, serve_cli


def _live(tmp_path, name: str):
    pid = start(["sleep", "300"], dict(os.environ), tmp_path / name / "proc.log")
    return record_stack(tmp_path / name / "state", pid, start_time(pid)), pid


def _stop(pid: int) -> None:
    from bankbench.procs import stop_group

    stop_group(pid)


def test_down_leaves_a_running_sweeps_stack_alone(serve_env, tmp_path):
    mine, my_pid = _live(tmp_path, "mine")
    sweep_dir = tmp_path / "jobs" / "sweep-1"
    sweep_dir.mkdir(parents=True)
    (sweep_dir / "sweep.json").write_text("{}")
    pid = start(["sleep", "300"], dict(os.environ), tmp_path / "sweep-proc.log")
    theirs = record_stack(sweep_dir / "server", pid, start_time(pid))
    try:
        assert len(known_state_dirs()) == 2
        done = serve_cli("down", env=serve_env)
        assert done.returncode == 0, done.stderr
        deadline = time.monotonic() + 10
        while group_alive(my_pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not group_alive(my_pid)
        assert group_alive(pid)  # the sweep's stack still runs
        assert (theirs.state_dir / "state.json").exists()
        again = serve_cli("down", env=serve_env)
        assert again.returncode == 1 and "stop with their sweeps" in again.stderr
    finally:
        _stop(pid)
    assert not (mine.state_dir / "state.json").exists()


def test_status_with_several_stacks_shows_each(serve_env, tmp_path):
    a, pid_a = _live(tmp_path, "a")
    b, pid_b = _live(tmp_path, "b")
    try:
        done = serve_cli("status", env=serve_env)
        assert "several stacks" not in done.stderr
        assert f"== {a.state_dir}" in done.stdout and f"== {b.state_dir}" in done.stdout
        down = serve_cli("down", env=serve_env)  # stopping is never a guess
        assert down.returncode == 1 and "several stacks running" in down.stderr
        assert "cpu-mocker at http://127.0.0.1:9/v1" in down.stderr
    finally:
        _stop(pid_a)
        _stop(pid_b)
