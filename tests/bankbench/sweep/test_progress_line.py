"""The live progress line of a level: total, failures by class, ETA, and a TSQ that an
infrastructure failure does not drag towards 0."""

from __future__ import annotations

from pathlib import Path

from analysis.synthetic import write_job, write_trial
from bankbench.sweep import progress

ZERO = {"tsq": 0.0, "precision": 0.0, "recall": 0.0, "param_validity": 0.0,
        "multiset_f1": 0.0, "goal_coverage": 0.0}


def _dead_server_job(job_dir: Path) -> Path:
    """Six trials planned; two finished against a server that had gone away (the agent says
    infra_error, the verifier scored the empty intent log 0) and one still running."""
    write_job(job_dir, n_concurrent=2, n_total_trials=6, finished=False)
    for name in ("banking-000__a", "banking-001__b"):
        write_trial(job_dir, name, scenario_id=name.split("__")[0], rewards=ZERO,
                    agent_status={"status": "infra_error", "reason": "ConnectError"})
    write_trial(job_dir, "banking-002__c", scenario_id="banking-002", running=True)
    return job_dir


def test_infra_failures_are_counted_not_averaged_as_zero(tmp_path):
    text = progress.line(2, _dead_server_job(tmp_path / "c2"))
    assert text is not None
    assert "TSQ 0.000" not in text
    assert "c2: 2/6 done, 1 running, 2 failed (2 infra_failed)" in text
    assert "no scored trial yet" in text


def test_tsq_is_the_mean_of_quality_trials_with_its_count(tmp_path):
    job = _dead_server_job(tmp_path / "c1")
    write_trial(job, "banking-003__d", scenario_id="banking-003",
                rewards={**ZERO, "tsq": 0.8}, agent_status={"status": "ok"})
    text = progress.line(1, job)
    assert "3/6 done" in text and "2 failed (2 infra_failed)" in text
    assert "TSQ 0.800 (n=1, 2 excluded)" in text  # beside it, what it leaves out


def test_eta_from_the_pace_of_this_run():
    # 2 of 10 ran in 60 s here (3 were done before a resume): 5 left at 30 s each
    assert progress.eta(5, 10, 60.0, done_before=3) == "2 min 30 s"
    assert progress.eta(3, 10, 60.0, done_before=3) is None  # nothing finished yet in this run
    assert progress.eta(10, 10, 60.0) is None
    assert progress.eta(1, None, 5.0) is None


def test_the_eta_counts_down_while_nothing_finishes():
    # 4 of 10 finished in the first 40 s (10 s each); then nothing for 20 s, then for 80 s
    first = progress.eta(4, 10, 40.0, since_last_s=0.0)
    later = progress.eta(4, 10, 60.0, since_last_s=20.0)
    assert (first, later) == ("1 min 00 s", "40 s")  # down, not up (the old pace gave 1 min 30)
    assert progress.eta(4, 10, 120.0, since_last_s=80.0) == \
        "overdue (no trial finished for 1 min 20 s)"
