"""A second real engine: llama.cpp's own OpenAI server (llama-cpp-python, SmolLM2-135M GGUF).

The server is not bankbench's and is reached as any external server is (`--base-url`,
`--model`): `check`, `sweep` and `report` run end to end against it in both tool modes. It
sends no `usage` in its stream and has no /metrics, which these tests also pin down.
Kept small: two tasks, level 1, few steps and few completion tokens.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.llamacpp_server import llamacpp_server

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

HARBOR_ENV = {"HARBOR_TELEMETRY": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def _bankbench(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bankbench", *args], capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **HARBOR_ENV})


def _verdict(stdout: str) -> str:
    return next(line for line in stdout.splitlines() if line.startswith("verdict:"))


def test_check_does_not_suggest_a_mode_whose_first_request_overflows(tmp_path):
    """The context is too small for the text-mode prompt (tool schemas in the system prompt)
    but not for the native one: the check must not suggest text, and asked for text it fails."""
    with llamacpp_server(tmp_path, n_ctx=2048) as server:
        url = ("--base-url", server.base_url, "--model", server.model)
        free = _bankbench("check", *url, "--ak", "max_tokens=16")
        chosen = _bankbench("check", *url, "--ak", "tool_mode=text", "--ak", "max_tokens=16")
    out = free.stdout
    assert "[FAIL] agent:text" in out, out + free.stderr
    assert "tool_mode=text" not in _verdict(out)
    assert "[WARN] usage" in out  # this server sends no usage
    assert chosen.returncode == 1, chosen.stdout + chosen.stderr
    assert "agent:native" not in chosen.stdout  # only the chosen mode is tried
    assert _verdict(chosen.stdout).startswith("verdict: the agent cannot run")


def _sweep(tmp_path: Path, server, mode: str) -> Path:
    args = ["sweep", "--base-url", server.base_url, "--model", server.model, "--levels", "1",
            "--limit", "2", "--source", "sample", "--out", str(tmp_path), "--name", mode,
            "--ak", f"tool_mode={mode}", "--ak", "max_tokens=48", "--ak", "max_steps=2"]
    done = _bankbench(*args, timeout=840)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    # Named once per sweep, not at each of the level's two scrapes.
    assert done.stdout.count("no /metrics from") == 1, done.stdout
    return tmp_path / mode


def _llm_calls(sweep: Path) -> list[dict]:
    rows = []
    for path in sweep.rglob("llm_calls.jsonl"):
        rows += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return rows


@pytest.mark.harbor
@pytest.mark.parametrize("mode,chat_format,n_ctx", [
    ("native", "chatml-function-calling", 8192),
    ("text", None, 8192),
])
def test_check_sweep_and_report_end_to_end(tmp_path, mode, chat_format, n_ctx):
    with llamacpp_server(tmp_path / "server", n_ctx=n_ctx, chat_format=chat_format) as server:
        check = _bankbench("check", "--base-url", server.base_url, "--model", server.model,
                           "--ak", f"tool_mode={mode}", "--ak", "max_tokens=48")
        assert check.returncode == 0, check.stdout + check.stderr
        assert f"agent:{mode}" in check.stdout
        sweep = _sweep(tmp_path, server, mode)
    calls = _llm_calls(sweep)
    assert calls and any(c.get("error") is None for c in calls), calls[:2]
    # No usage from this server: counts stay unknown, never 0.
    assert all(c.get("completion_tokens") is None for c in calls)
    report = _bankbench("report", str(sweep), timeout=300)
    assert report.returncode == 0, report.stdout + report.stderr
    assert (sweep / "report.md").exists()
