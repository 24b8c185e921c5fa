"""A second real engine: llama.cpp's own OpenAI server (xllamacpp wheel, SmolLM2-135M GGUF).

The server is not bankbench's and is reached as any external server is (`--base-url`,
`--model`): `check`, `sweep` and `report` run end to end against it in both tool modes. It
sends `usage` in its stream but has no /metrics unless asked, which these tests also pin down.
Kept small: one task, level 1, few steps and few completion tokens (on 2 cores each request reads
the ~5k-token tool prompt). Nothing is compiled: the
server comes from the prebuilt wheel the cpu-tiny profile caches.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.built_tasks import CHEAP_LABELS
from tests.support.llamacpp_server import llamacpp_server

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

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
    assert "[WARN] usage" not in out  # this server sends usage
    assert chosen.returncode == 1, chosen.stdout + chosen.stderr
    assert "agent:native" not in chosen.stdout  # only the chosen mode is tried
    assert _verdict(chosen.stdout).startswith("verdict: the agent cannot run")


def _sweep(tmp_path: Path, server, mode: str, *ak: str) -> Path:
    args = ["sweep", "--base-url", server.base_url, "--model", server.model, "--levels", "1",
            "--limit", "1", "--source", "sample", "--labels", CHEAP_LABELS, "--out", str(tmp_path),
            "--name", mode,
            "--ak", f"tool_mode={mode}", "--ak", "max_tokens=48", "--ak", "max_steps=2"]
    for item in ak:
        args += ["--ak", item]
    done = _bankbench(*args, timeout=1500)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    # Named once per sweep, not at each of the level's two scrapes.
    assert done.stdout.count("no /metrics from") == 1, done.stdout
    report = _bankbench("report", str(tmp_path / mode), timeout=300)
    assert report.returncode == 0, report.stdout + report.stderr
    return tmp_path / mode


def _llm_calls(sweep: Path) -> list[dict]:
    rows = []
    for path in sweep.rglob("llm_calls.jsonl"):
        rows += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return rows


@pytest.mark.harbor
def test_text_mode_check_sweep_and_report_with_server_counted_tokens(tmp_path):
    """Text mode runs end to end; the server's own usage is what the records carry."""
    with llamacpp_server(tmp_path / "server", n_ctx=8192) as server:
        check = _bankbench("check", "--base-url", server.base_url, "--model", server.model,
                           "--ak", "tool_mode=text", "--ak", "max_tokens=48")
        assert check.returncode == 0, check.stdout + check.stderr
        assert "[FAIL]" not in check.stdout and "tool_mode=text" in _verdict(check.stdout)
        sweep = _sweep(tmp_path, server, "text")
    ok = [c for c in _llm_calls(sweep) if c.get("error") is None]
    assert ok, "no request of the text-mode sweep succeeded"
    assert all(c["token_source"] == "server" and c["completion_tokens"] > 0 for c in ok)


@pytest.mark.harbor
def test_native_mode_the_check_predicts_the_sweep(tmp_path):
    """Whatever llama.cpp's own tool-call handling makes of this model in native mode, the
    check's verdict and the sweep agree: a passing check means the sweep's agent requests
    succeed, a failing one that they fail."""
    with llamacpp_server(tmp_path / "server", n_ctx=8192) as server:
        check = _bankbench("check", "--base-url", server.base_url, "--model", server.model,
                           "--ak", "tool_mode=native", "--ak", "max_tokens=48")
        sweep = _sweep(tmp_path, server, "native")
    calls = [c for c in _llm_calls(sweep) if c["role"] == "agent"]
    assert calls
    if check.returncode == 0:
        assert "[FAIL] agent:native" not in check.stdout, check.stdout
        assert any(c["error"] is None for c in calls), [c["error"] for c in calls]
    else:
        assert "[FAIL] agent:native" in check.stdout, check.stdout + check.stderr
        assert all(c["error"] is not None for c in calls)
