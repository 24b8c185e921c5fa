"""`bankbench check` as a user runs it, against the real stack and against nothing."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest


def _check(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bankbench", "check", *args],
                          capture_output=True, text=True, timeout=300)


@pytest.mark.dynamo
def test_check_passes_on_the_mocker_stack(scripted_stack):
    # The agent's first request as a sweep with that option sends it: unscripted, the mocker
    # writes to max_tokens, and the default 1,024 cost ~7 s a mode at its speed.
    proc = _check("--base-url", scripted_stack.base_url, "--model", scripted_stack.model,
                  "--ak", "max_tokens=64")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "max_tokens=64" in proc.stdout
    assert "[PASS] models" in proc.stdout and "[PASS] stream" in proc.stdout
    assert "TTFT" in proc.stdout and "tools:named" in proc.stdout
    assert "verdict: the agent can run here" in proc.stdout


@pytest.mark.dynamo
def test_check_names_a_model_the_server_lacks(scripted_stack):
    proc = _check("--base-url", scripted_stack.base_url, "--model", "no-such-model")
    assert proc.returncode == 1
    assert f"listed: {scripted_stack.model}" in proc.stdout


def test_check_fails_cleanly_without_a_server():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.run([sys.executable, "-m", "agents.test_agent", "--base-url",
                           f"http://127.0.0.1:{port}/v1", "--model", "m", "--timeout", "2"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert "[FAIL] models" in proc.stdout and "Traceback" not in proc.stderr


def test_check_refuses_a_folder_that_is_no_task_and_a_bad_option(tmp_path):
    base = [sys.executable, "-m", "agents.test_agent", "--model", "m"]
    no_task = subprocess.run([*base, "--task", str(tmp_path)], capture_output=True, text=True,
                             timeout=120)
    bad = subprocess.run([*base, "--ak", "tool_mode=smoke"], capture_output=True, text=True,
                         timeout=120)
    assert no_task.returncode == 2 and "not a built bankbench task" in no_task.stderr
    assert bad.returncode == 2 and "--ak tool_mode" in bad.stderr
    assert "Traceback" not in no_task.stderr + bad.stderr


def test_the_report_goes_where_stdout_points_when_it_is_printed():
    """`check` run in-process under a redirect (a notebook, a test) prints its report there,
    whatever stdout was when the module was first imported."""
    import contextlib
    import io

    from agents.test_agent import Probe, report

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        report([Probe("models", "PASS", "1 listed")])
    assert out.getvalue().startswith("[PASS] models")
