"""`bankbench serve …` as users run it: a separate process starts the stack, others find it."""

import os
import subprocess
import sys

import pytest

from bankbench.procs import group_alive
from bankbench.serve.state import load_state
from tests.support.cli import bankbench_here


def bankbench(*args, env=None):
    return subprocess.run([sys.executable, "-m", "bankbench", "serve", *args],
                          capture_output=True, text=True, env=env, timeout=300)


@pytest.fixture
def isolated_cache(tmp_path):
    """Own folder for serve state; the Dynamo venv and model files stay the machine's."""
    return dict(os.environ, BANKBENCH_SERVE_STATE=str(tmp_path / "serve"))


@pytest.mark.dynamo
def test_up_status_logs_metrics_down(isolated_cache, tmp_path, dynamo_python):
    env = isolated_cache
    up = bankbench("up", "--profile", "cpu-mocker", "--workers", "2",
                   "--set", "speedup_ratio=1000", env=env)
    assert up.returncode == 0, up.stderr
    fields = dict(line.split(": ", 1) for line in up.stdout.splitlines())
    assert fields["base_url"].startswith("http://127.0.0.1:") and fields["model"] == "smollm2-mock"
    state = load_state(fields["state_dir"])
    try:
        st = bankbench("status", env=env)
        assert st.returncode == 0, st.stdout + st.stderr
        assert "workers registered: 2" in st.stdout
        lg = bankbench("logs", "--component", "frontend", "-n", "5", env=env)
        assert lg.returncode == 0 and "==> frontend" in lg.stdout
        mt = bankbench("metrics", "--out", str(tmp_path / "m.prom"), env=env)
        assert mt.returncode == 0, mt.stderr
        assert "dynamo_frontend_" in (tmp_path / "m.prom").read_text()
        url = bankbench("status", "--url", fields["base_url"], env=env)
        assert url.returncode == 0 and "smollm2-mock" in url.stdout
    finally:
        down = bankbench("down", "--state-dir", "cpu-mocker", env=env)  # a profile name works
    assert down.returncode == 0, down.stderr
    assert not any(group_alive(c.pid) for c in state.components)
    after = bankbench("status", env=env)
    assert after.returncode == 1 and "no running stack" in after.stderr


def test_errors_are_one_line_and_nonzero(tmp_path, monkeypatch):
    env = dict(os.environ, BANKBENCH_CACHE=str(tmp_path),
               BANKBENCH_SERVE_STATE=str(tmp_path / "serve"))
    for name in ("BANKBENCH_CACHE", "BANKBENCH_SERVE_STATE"):
        monkeypatch.setenv(name, env[name])
    cases = [
        (["up", "--profile", "cpu-mocker", "--set", "speedup_ratio=fast"], "speedup_ratio"),
        (["up", "--profile", "gpu-vllm", "--set", "worker.tp=0"], "worker.tp"),
        (["up", "--profile", "cpu-tiny", "--set", "gguf=/nope.gguf"], "gguf"),
        (["up", "--profile", "warp-drive"], "unknown profile"),
        (["up", "--profile", "cpu-mocker", "--set", "no_such_key=1"], "no_such_key"),
        (["up", "--profile", "cpu-mocker", "--router", "telepathy"], "unknown router"),
        (["up", "--profile", "external"], "needs --set url"),
        (["down"], "no running stack"),
        (["status", "--url", "http://127.0.0.1:9/v1"], "did not answer"),
    ]
    for i, (args, needle) in enumerate(cases):
        # The first and the last in a process of their own (exit code, no traceback); the
        # others in this one, which saves a Python start-up and the CLI's imports each.
        proc = (bankbench(*args, env=env) if i in (0, len(cases) - 1)
                else bankbench_here("serve", *args))
        assert proc.returncode != 0, args
        err = proc.stderr + proc.stdout
        assert needle in err, (args, err)
        causes = [ln for ln in proc.stderr.splitlines() if ln.startswith("bankbench serve:")]
        assert len(causes) <= 1
        if args[0] == "up":
            # Validation comes before the start is announced: the cause is all there is.
            assert proc.stderr.splitlines() == causes, (args, proc.stderr)
