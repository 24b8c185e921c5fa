"""`bankbench sweep --routers round-robin,thompson`: one sweep per router in r-<router>/,
killed outright during the second router and resumed — nothing lost or run twice, the first
router not rerun, and every LLM call of the thompson run joined to the worker that served it.

Real parts: `bankbench sweep` as a subprocess, the harbor CLI, LocalEnvironment, the Dynamo
frontend with mocker workers (and the thompson router component)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from analysis.files import read_llm_calls
from analysis.router_decisions import join_llm_calls
from tests.support.built_tasks import CHEAP_LABELS
from tests.support.cli import HARBOR_ENV, bankbench

pytestmark = [pytest.mark.dynamo, pytest.mark.harbor, pytest.mark.slow]

N_TASKS, ATTEMPTS, LEVEL = 3, 2, 2
PER_ROUTER = N_TASKS * ATTEMPTS


def _finished(job: Path) -> dict[str, bytes]:
    if not job.is_dir():
        return {}
    return {p.name: (p / "result.json").read_bytes() for p in job.iterdir()
            if (p / "result.json").is_file()}


def test_multi_router_sweep_resumes_after_sigkill(tmp_path):
    cmd = [sys.executable, "-m", "bankbench", "sweep", "--profile", "cpu-mocker",
           "--routers", "round-robin,thompson", "--workers", "2",
           "--set", "speedup_ratio=10", "--levels", str(LEVEL), "--attempts", str(ATTEMPTS),
           "--source", "sample", "--labels", CHEAP_LABELS, "--limit", str(N_TASKS),
           "--out", str(tmp_path), "--name", "s"]
    log = tmp_path / "sweep.out"
    proc = subprocess.Popen(cmd, stdout=log.open("w"), stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, **HARBOR_ENV})
    sweep = tmp_path / "s"
    second = sweep / "r-thompson" / f"c{LEVEL}"
    deadline = time.monotonic() + 600
    while not 1 <= len(_finished(second)) < PER_ROUTER:
        assert proc.poll() is None, log.read_text()[-3000:]
        assert time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.2)
    before = _finished(second)
    first_done = _finished(sweep / "r-round-robin" / f"c{LEVEL}")
    proc.kill()
    proc.wait()
    assert len(first_done) == PER_ROUTER

    done = bankbench("sweep", "--resume", str(sweep), timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "router round-robin: already complete, skipped" in done.stdout
    assert f"level {LEVEL}: resuming" in done.stdout

    routers = json.loads((sweep / "routers.json").read_text())
    assert routers["routers"] == ["round-robin", "thompson"]
    assert [r["state"] for r in routers["runs"]] == ["complete", "complete"]
    assert routers["finished_at"] is not None
    for name in ("round-robin", "thompson"):
        sub = sweep / f"r-{name}"
        manifest = json.loads((sub / "sweep.json").read_text())
        assert manifest["router"] == name
        assert [(r["router"], r["state"]) for r in manifest["level_records"]] == [
            (name, "complete")]
        after = _finished(sub / f"c{LEVEL}")
        assert Counter(n.split("__")[0] for n in after) == Counter(
            {t: ATTEMPTS for t in {n.split("__")[0] for n in after}})
        assert len(after) == PER_ROUTER
        assert (sub / "report.md").exists()
    # finished trials are kept byte for byte, the first router's too
    assert {n: _finished(second).get(n) for n in before} == before
    assert _finished(sweep / "r-round-robin" / f"c{LEVEL}") == first_done

    # every agent call of the resumed thompson run is one the router decided, with a worker
    # and why (calls before the kill may lack the frontend's last, unflushed trace lines)
    calls = [c.model_dump() for t in second.iterdir()
             if (t / "result.json").exists() and t.name not in before
             for c in read_llm_calls(t, []).records]
    assert calls
    joined = join_llm_calls(pd.DataFrame(calls), sweep / "r-thompson" / "server")
    assert joined["worker"].notna().all(), joined[joined["worker"].isna()]["request_id"]
    assert joined["reason"].str.len().gt(0).all()
