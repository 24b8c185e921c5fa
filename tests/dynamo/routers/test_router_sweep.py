"""`bankbench sweep --routers kv,thompson`: one sweep per router in r-<router>/, killed outright
during the second router and resumed — nothing lost or run twice, the first router not rerun,
and every LLM call of the thompson run joined to the worker that served it. The same run's kv
sweep shows what routed it (the frontend's router mode and policy file) recorded in sweep.json
and named in the report.

Real parts: `bankbench sweep` as a subprocess, the harbor CLI, LocalEnvironment, the Dynamo
frontend with mocker workers (and the thompson router component). Without figures (--no-plots,
both runs): no assertion reads one, and each router's report drew ~3 s of them."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from analysis.files import read_llm_calls
from analysis.router_decisions import join_llm_calls
from tests.support.built_tasks import CHEAP_LABELS
from tests.support.cli import HARBOR_ENV, bankbench_here
from tests.support.interrupted_sweep import finished
from tests.support.router_policy import POLICY

pytestmark = [pytest.mark.dynamo, pytest.mark.harbor, pytest.mark.slow]

# 3 trials a router at c2: the kill after the second router's first trial leaves one or two
# of its trials unfinished
N_TASKS, ATTEMPTS, LEVEL = 3, 1, 2
PER_ROUTER = N_TASKS * ATTEMPTS
ROUTERS = ("kv", "thompson")


@dataclass
class Resumed:
    sweep: Path
    before: dict[str, str]  # the second router's trials finished before the kill
    first_done: dict[str, str]  # the first router's, at the kill
    done: subprocess.CompletedProcess  # the resume


@pytest.fixture(scope="module")
def resumed(tmp_path_factory) -> Resumed:
    tmp = tmp_path_factory.mktemp("router-sweep")
    policy = tmp / "policy.yaml"
    policy.write_text(POLICY)
    cmd = [sys.executable, "-m", "bankbench", "sweep", "--profile", "cpu-mocker",
           "--routers", ",".join(ROUTERS), "--workers", "2",
           "--set", "speedup_ratio=10", "--set", f"frontend_args=--router-policy-config {policy}",
           "--levels", str(LEVEL), "--attempts", str(ATTEMPTS),
           "--source", "sample", "--labels", CHEAP_LABELS, "--limit", str(N_TASKS),
           "--no-plots", "--out", str(tmp), "--name", "s"]
    log = tmp / "sweep.out"
    proc = subprocess.Popen(cmd, stdout=log.open("w"), stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, **HARBOR_ENV})
    sweep = tmp / "s"
    second = sweep / f"r-{ROUTERS[1]}" / f"c{LEVEL}"
    deadline = time.monotonic() + 600
    while not 1 <= len(finished(second)) < PER_ROUTER:
        assert proc.poll() is None, log.read_text()[-3000:]
        assert time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.2)
    before = finished(second)
    first_done = finished(sweep / f"r-{ROUTERS[0]}" / f"c{LEVEL}")
    proc.kill()
    proc.wait()
    done = bankbench_here("sweep", "--resume", str(sweep), "--no-plots")  # read by what it writes
    return Resumed(sweep, before, first_done, done)


def test_multi_router_sweep_resumes_after_sigkill(resumed):
    sweep, before, first_done, done = (resumed.sweep, resumed.before, resumed.first_done,
                                       resumed.done)
    second = sweep / "r-thompson" / f"c{LEVEL}"
    assert len(first_done) == PER_ROUTER
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "router kv: already complete, skipped" in done.stdout
    assert f"level {LEVEL}: resuming" in done.stdout

    routers = json.loads((sweep / "routers.json").read_text())
    assert routers["routers"] == list(ROUTERS)
    assert [r["state"] for r in routers["runs"]] == ["complete", "complete"]
    assert routers["finished_at"] is not None
    for name in ROUTERS:
        sub = sweep / f"r-{name}"
        manifest = json.loads((sub / "sweep.json").read_text())
        assert manifest["router"] == name
        assert [(r["router"], r["state"]) for r in manifest["level_records"]] == [
            (name, "complete")]
        after = finished(sub / f"c{LEVEL}")
        assert Counter(n.split("__")[0] for n in after) == Counter(
            {t: ATTEMPTS for t in {n.split("__")[0] for n in after}})
        assert len(after) == PER_ROUTER
        assert (sub / "report.md").exists()
    # finished trials are kept byte for byte, the first router's too
    assert {n: finished(second).get(n) for n in before} == before
    assert finished(sweep / "r-kv" / f"c{LEVEL}") == first_done

    # every agent call of the resumed thompson run is one the router decided, with a worker
    # and why (calls before the kill may lack the frontend's last, unflushed trace lines)
    calls = [c.model_dump() for t in second.iterdir()
             if (t / "result.json").exists() and t.name not in before
             for c in read_llm_calls(t, []).records]
    assert calls
    joined = join_llm_calls(pd.DataFrame(calls), sweep / "r-thompson" / "server")
    assert joined["worker"].notna().all(), joined[joined["worker"].isna()]["request_id"]
    assert joined["reason"].str.len().gt(0).all()


def test_a_profile_sweep_records_its_router_setup_and_the_report_names_it(resumed):
    sub = resumed.sweep / "r-kv"
    setup = json.loads((sub / "sweep.json").read_text())["router_setup"]
    assert setup["mode"] == "kv" and setup["policy_config"] == POLICY
    sha = hashlib.sha256(POLICY.encode()).hexdigest()
    assert setup["policy_config_sha256"] == sha
    assert setup["queue_policy"] == "wspt" and setup["queue_policy_from"] == "policy config"
    assert f"kv; queue wspt (policy config); policy sha256:{sha[:12]}" in (
        sub / "report.md").read_text()
