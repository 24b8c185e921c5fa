"""A small soak (benchmarks/soak.py at 30 trials, -n 8): real harbor, agent, LocalEnvironment and
Dynamo frontend + one mocker worker (what is soaked is the client, the harness and the analysis:
a second worker only costs the machine), behind the fault-injecting test proxy (~10 % faults plus
an outage of whole agent sessions).
Every trial is accounted for, every fault is a counted retry or a named failure, infra failures
stay out of TSQ, and the API key never reaches the job directory."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from benchmarks.soak import problems, run_soak
from tests.support.cli import bankbench_here

pytestmark = [pytest.mark.dynamo, pytest.mark.harbor, pytest.mark.slow]

TRIALS, CONCURRENCY, OUTAGE = 30, 8, 3


@pytest.fixture(scope="module")
def soak(tmp_path_factory: pytest.TempPathFactory):
    work = tmp_path_factory.mktemp("soak")
    return run_soak(work, trials=TRIALS, concurrency=CONCURRENCY, outage=OUTAGE, workers=1,
                    log=lambda line: None)


def test_every_trial_and_fault_is_accounted_for(soak):
    assert problems(soak, TRIALS) == []
    assert soak.faults_total >= 4 * OUTAGE  # the seeded faults plus the outage really happened
    # Every request of the outage's sessions failed: exactly those trials spent their tries.
    assert len(soak.outage) == OUTAGE
    assert set(soak.outage.values()) == {"infra_failed"}
    assert soak.statuses["infra_failed"] >= OUTAGE and soak.statuses["scored"] >= TRIALS // 2
    assert soak.statuses["harness_failed"] == 0
    assert soak.key_found_in == []


def test_infra_failures_are_named_and_excluded_from_quality(soak):
    rows = list(csv.DictReader(_report_table(soak.job_dir).open()))
    infra = [r for r in rows if r["status"] == "infra_failed"]
    assert len(infra) == soak.statuses["infra_failed"]
    for r in infra:
        # the outage's trials spent their 4 tries; a seeded fault can also end a request (two
        # identical 500s in a row are not retried further)
        assert r["status_reason"].startswith("agent: LLM request failed")
        if r["trial"] in soak.outage:
            assert r["status_reason"].startswith("agent: LLM request failed after 4 tries")
        assert r["in_quality"] == "False"
    scored = [float(r["tsq"]) for r in rows if r["status"] == "scored"]
    assert soak.tsq_in_quality == pytest.approx(sum(scored) / len(scored))
    # The scripts make TSQ vary; counting the failed trials as zeros would move the mean.
    assert soak.tsq_all_rows < soak.tsq_in_quality


def _report_table(job: Path) -> Path:
    out = job.parent / "report"
    done = bankbench_here("report", str(job), "--out", str(out), "--no-plots")  # in process
    assert done.returncode == 0, done.stderr[-2000:]
    report = (out / "report.md").read_text()
    assert "infra failed" in report
    return out / "trials.csv"
