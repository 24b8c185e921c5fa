"""Fake Harbor job directories with known content, written with Harbor's own models."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.synthetic import record, write_job, write_trial

S = 1_000_000_000  # one second in ns
T = 1_700_000_000 * S  # an arbitrary wall-clock origin


def known_job(job_dir: Path) -> Path:
    """Four finished trials (scored, agent/infra/harness failures); hand-made answers.

    Requests (all of trial `banking-000__a` unless said):
      A start T+1.000 s, TTFT 10, gaps [5, 5, 10], e2e 30 ms, 4 output tokens → TPOT 20/3 ms
      B start T+1.020 s, TTFT 20, gaps [10],       e2e 40 ms, 2 output tokens → TPOT 20 ms
      C start T+1.030 s, failed (http 503), e2e 10 ms (trial `banking-001__b`)
    Window = T+1.000 → T+1.060 = 0.06 s.
    """
    write_job(job_dir, n_concurrent=2, n_total_trials=4)
    a = record(request_id="A", start_unix_ns=T + 1 * S, ttft_ms=10.0, itl_ms=[5.0, 5.0, 10.0],
               e2e_ms=30.0, completion_tokens=4, prompt_tokens=100, cached_tokens=80)
    b = record(request_id="B", start_unix_ns=T + 1 * S + 20_000_000, ttft_ms=20.0,
               itl_ms=[10.0], e2e_ms=40.0, completion_tokens=2, prompt_tokens=300,
               cached_tokens=0, role="evaluator", step=0)
    c = record(request_id="C", start_unix_ns=T + 1 * S + 30_000_000, ttft_ms=None, itl_ms=[],
               e2e_ms=10.0, completion_tokens=None, prompt_tokens=None, cached_tokens=None,
               http_status=503, error={"type": "http_503", "message": "unavailable"})
    write_trial(job_dir, "banking-000__a", scenario_id="banking-000", records=[a, b],
                rewards={"tsq": 1.0, "precision": 1.0, "recall": 1.0, "param_validity": 1.0,
                         "multiset_f1": 1.0, "goal_coverage": 1.0},
                agent_status={"status": "ok", "reason": None},
                tsq_details={"attempts": [{"attempt": 1, "reward": {"tsq": 0.5}},
                                          {"attempt": 2, "reward": {"tsq": 1.0}}],
                             "scored_attempt": 2})
    # Agent gave up: counts in quality; its verifier still scored it 0.5.
    write_trial(job_dir, "banking-001__b", scenario_id="banking-001", records=[c],
                rewards={"tsq": 0.5, "precision": 0.5, "recall": 0.5, "param_validity": 0.0,
                         "multiset_f1": 0.5, "goal_coverage": 0.5},
                agent_status={"status": "agent_error", "reason": "max steps reached"})
    # Server failed under the agent: excluded from quality although a reward exists.
    write_trial(job_dir, "banking-002__c", scenario_id="banking-002",
                rewards={"tsq": 1.0, "precision": 1.0, "recall": 1.0, "param_validity": 1.0,
                         "multiset_f1": 1.0, "goal_coverage": 1.0},
                agent_status={"status": "infra_error", "reason": "connection refused"})
    # Environment crashed: harness failure, Harbor wrote exception.txt and no reward.
    write_trial(job_dir, "banking-003__d", scenario_id="banking-003",
                exception_type="EnvironmentStartTimeoutError")
    return job_dir


@pytest.fixture(scope="module")
def known_job_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return known_job(tmp_path_factory.mktemp("jobs") / "known-job")


def partial_job(job_dir: Path) -> Path:
    """A job caught mid-run: a running trial whose last jsonl line is cut, an invalid line in
    the middle of another trial's file, and a trial whose result.json is not JSON."""
    write_job(job_dir, n_concurrent=4, n_total_trials=6, finished=False)
    ok = dict(rewards={"tsq": 0.5}, agent_status={"status": "ok"})
    write_trial(job_dir, "banking-010__a", scenario_id="banking-010", **ok,
                records=[record(request_id="A1", start_unix_ns=T, ttft_ms=12.0, e2e_ms=50.0)])
    write_trial(job_dir, "banking-011__b", scenario_id="banking-011", running=True,
                records=[record(request_id="B1", start_unix_ns=T + S, ttft_ms=14.0,
                                e2e_ms=60.0)],
                truncated_tail='{"request_id": "B2", "trial_na')
    bad_middle = job_dir / "banking-012__c"
    write_trial(job_dir, "banking-012__c", scenario_id="banking-012", **ok,
                records=[record(request_id="C1", start_unix_ns=T, ttft_ms=16.0, e2e_ms=70.0)])
    calls = bad_middle / "agent" / "llm_calls.jsonl"
    calls.write_text('{"not": "a record"}\n' + calls.read_text())
    broken = write_trial(job_dir, "banking-013__d", scenario_id="banking-013", **ok)
    (broken / "result.json").write_text('{"trial_name": ')
    return job_dir


@pytest.fixture(scope="module")
def partial_job_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return partial_job(tmp_path_factory.mktemp("jobs") / "partial-job")
