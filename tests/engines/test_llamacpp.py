"""A second real engine: llama.cpp's own OpenAI server (xllamacpp wheel, SmolLM2-135M GGUF).

The server is not bankbench's and is reached as any external server is (`--base-url`,
`--model`). Kept quick: `check` on a context too small for the text-mode prompt (the native
one fits), which sends each mode's real first request and the short probes, and sees that
this server sends `usage` in its stream. Nothing is compiled: the server comes from the
prebuilt wheel the cpu-tiny profile caches.

`check`, `sweep` and `report` end to end in both tool modes, and whether the check's verdict
predicts the sweep, are `benchmarks/llamacpp_server.py` (each sweep request reads the ~5k-token
tool prompt: minutes on 2 cores). A server without /metrics named once per sweep is
tests/bankbench/sweep/test_metrics_scrape.py's.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.cli import bankbench_here
from tests.support.llamacpp_server import llamacpp_server

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

HARBOR_ENV = {"HARBOR_TELEMETRY": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def _bankbench(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "bankbench", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, **HARBOR_ENV})


def _finish(proc: subprocess.Popen, timeout: int = 600) -> subprocess.CompletedProcess:
    out, err = proc.communicate(timeout=timeout)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _verdict(stdout: str) -> str:
    return next(line for line in stdout.splitlines() if line.startswith("verdict:"))


def test_check_does_not_suggest_a_mode_whose_first_request_overflows(tmp_path):
    """The context is too small for the text-mode prompt (tool schemas in the system prompt)
    but not for the native one: the check must not suggest text, and asked for text it fails."""
    # The two checks run side by side, one server slot each (2,048 tokens per request either
    # way): they share the decode batch instead of taking turns. The first is the CLI as a
    # user runs it; the second runs in this process (its verdict and exit code are what is
    # asserted, not the process: a Python start-up and the CLI's imports fewer).
    with llamacpp_server(tmp_path, n_ctx=2048, parallel=2) as server:
        url = ("--base-url", server.base_url, "--model", server.model)
        running = _bankbench("check", *url, "--ak", "max_tokens=16")
        try:
            chosen = bankbench_here("check", *url, "--ak", "tool_mode=text",
                                    "--ak", "max_tokens=16")
            free = _finish(running)
        finally:
            if running.poll() is None:
                running.kill()
                running.wait()
    out = free.stdout
    assert "[FAIL] agent:text" in out, out + free.stderr
    assert "tool_mode=text" not in _verdict(out)
    assert "[WARN] usage" not in out  # this server sends usage
    assert chosen.returncode == 1, chosen.stdout + chosen.stderr
    assert "agent:native" not in chosen.stdout  # only the chosen mode is tried
    assert _verdict(chosen.stdout).startswith("verdict: the agent cannot run")
