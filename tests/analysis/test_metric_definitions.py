"""Every metric on hand-made records with answers worked out by hand (see conftest.known_job)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from analysis.metrics import ALL, BY_KEY
from analysis.metrics.base import (
    Metric,
    bootstrap_mean_ci,
    distribution,
    pass_at_k,
    pass_hat_k,
)
from analysis.metrics.goodput import SLO, parse_slo
from analysis.metrics.quality import repeat_spread
from analysis.summary import summarize
from analysis.tables import load


@pytest.fixture(scope="module")
def row(known_job_dir):
    summary = summarize(load(known_job_dir))
    assert len(summary) == 1
    return summary.iloc[0]


def approx(x):
    return pytest.approx(x, rel=1e-9, abs=1e-12)


def test_ttft_over_successful_requests(row):
    assert row["ttft_ms_mean"] == approx(15.0)
    assert row["ttft_ms_p50"] == approx(15.0)
    assert row["ttft_ms_p90"] == approx(19.0)  # linear interpolation between 10 and 20
    assert row["ttft_ms_std"] == approx(5.0)  # population std
    assert row["ttft_ms_count"] == 2  # the failed request C is not a latency sample


def test_itl_pools_every_gap(row):
    assert row["itl_ms_mean"] == approx(7.5)  # [5, 5, 10] + [10]
    assert row["itl_ms_p50"] == approx(7.5)
    assert row["itl_ms_count"] == 4


def test_tpot_and_per_user_throughput_use_server_token_counts(row):
    # A: (30 - 10) / (4 - 1) ms; B: (40 - 20) / (2 - 1) ms.
    assert row["tpot_ms_mean"] == approx((20 / 3 + 20) / 2)
    assert row["output_tps_per_user_mean"] == approx((150 + 50) / 2)
    assert row["e2e_ms_mean"] == approx(35.0)


def test_throughput_over_measured_window(row):
    assert row["window_s"] == approx(0.06)  # A starts at +1.000 s, B ends at +1.060 s
    assert row["output_token_throughput"] == approx(6 / 0.06)
    assert row["request_throughput"] == approx(2 / 0.06)
    assert row["error_rate"] == approx(1 / 3)


def test_achieved_concurrency_is_time_weighted(row):
    assert row["achieved_concurrency"] == approx((30 + 40 + 10) / 60)
    assert row["configured_concurrency"] == 2


def test_quality_counts_agent_failures_and_excludes_infra(row):
    assert row["n_counted"] == 2 and row["n_excluded"] == 2
    assert row["tsq_mean"] == approx(0.75)  # scored 1.0 + agent_failed 0.5
    assert row["param_validity_mean"] == approx(0.5)
    assert row["tsq_ci_low"] <= 0.75 <= row["tsq_ci_high"]
    assert row["pass_at_1"] == approx(0.5)
    assert math.isnan(row["pass_at_k"])  # one trial per scenario: no k >= 2


def test_self_evaluation_accounting(row):
    assert row["attempts_mean"] == approx(1.5)  # 2 attempts (tsq.json) and 1 (calls)
    assert row["retried_share"] == approx(0.5)
    assert row["extra_token_share"] == approx(302 / 406)  # evaluator call B
    assert row["extra_llm_time_share"] == approx(40 / 80)
    assert row["tsq_first_attempt_mean"] == approx(0.5)
    assert row["tsq_scored_attempt_mean"] == approx(0.75)
    assert row["self_eval_tsq_gain"] == approx(0.25)


def test_tokens_per_scenario_and_cache_share(row):
    assert row["requests_per_trial"] == approx(3 / 4)
    assert row["prompt_tokens_per_trial"] == approx(400 / 4)
    assert row["cached_token_share"] == approx(80 / 400)  # C reports no usage: left out


@pytest.mark.parametrize("slo, share, scenarios", [
    (SLO(ttft_ms=15), 1 / 3, 0.0),  # only A
    (SLO(ttft_ms=25), 2 / 3, 0.5),  # A and B: trial a fully within
    (SLO(ttft_ms=25, itl_ms=10), 1 / 3, 0.0),  # B's TPOT is 20 ms
    (SLO(e2e_s=0.035), 1 / 3, 0.0),
])
def test_goodput(known_job_dir, slo, share, scenarios):
    row = summarize(load(known_job_dir), slo).iloc[0]
    assert row["goodput_request_share"] == approx(share)
    assert row["goodput"] == approx(share * 3 / 0.06)
    assert row["goodput_scenario_share"] == approx(scenarios)


def test_parse_slo_and_its_errors():
    assert parse_slo("ttft_ms=500, itl_ms=50,e2e_s=30") == SLO(ttft_ms=500, itl_ms=50, e2e_s=30)
    with pytest.raises(ValueError, match="'ttft=5' is not one of"):
        parse_slo("ttft=5")
    with pytest.raises(ValueError, match="'abc' is not a number"):
        parse_slo("ttft_ms=abc")
    with pytest.raises(ValueError, match="must be > 0"):
        parse_slo("e2e_s=0")


def test_distribution_matches_hand_computation():
    d = distribution(np.array([110.0, 130.0, 150.0, 170.0, np.nan]))
    assert d["mean"] == 140 and d["p50"] == 140 and d["count"] == 4
    assert d["p90"] == approx(164.0) and d["min"] == 110 and d["max"] == 170
    assert math.isnan(distribution(np.array([]))["mean"])


def test_bootstrap_is_seeded_and_sensible():
    rng = np.random.default_rng(1)
    values = rng.normal(0.6, 0.2, size=400)
    mean, low, high = bootstrap_mean_ci(values)
    assert (mean, low, high) == bootstrap_mean_ci(values)  # repeatable
    half = 1.96 * values.std() / np.sqrt(values.size)
    assert low == pytest.approx(mean - half, abs=0.004)
    assert high == pytest.approx(mean + half, abs=0.004)
    assert bootstrap_mean_ci(np.array([0.7, 0.7, 0.7])) == pytest.approx((0.7, 0.7, 0.7))


def test_pass_at_k_estimators():
    assert pass_at_k(10, 3, 1) == approx(0.3)
    assert pass_at_k(4, 2, 2) == approx(5 / 6)
    assert pass_at_k(5, 0, 3) == 0.0 and pass_at_k(3, 1, 3) == 1.0
    assert pass_hat_k(4, 2, 2) == approx(1 / 6)
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)


def test_repeat_spread_across_scenarios():
    import pandas as pd

    trials = pd.DataFrame({"scenario_id": ["x"] * 4 + ["y"] * 2,
                           "tsq": [1.0, 1.0, 0.0, 0.0, 1.0, 0.0],
                           "solved": [1.0, 1.0, 0.0, 0.0, 1.0, 0.0]})
    spread = repeat_spread(trials)
    assert spread["k"] == 2
    assert spread["pass_at_1"] == approx(0.5)
    assert spread["pass_at_k"] == approx((5 / 6 + 1) / 2)
    assert spread["pass_hat_k"] == approx((1 / 6 + 0) / 2)
    assert spread["tsq_scenario_std"] == approx(0.5)


def test_every_metric_has_unit_direction_and_definition():
    assert len(BY_KEY) == len(ALL)
    for metric in ALL:
        assert metric.unit and metric.description
        assert metric.better in ("higher", "lower", None)
        assert metric.larger_is_better == {"higher": True, "lower": False, None: None}[
            metric.better]


def test_a_direction_is_named_and_never_left_out():
    with pytest.raises(TypeError, match="better"):
        Metric("k", "K", "ms", "A figure.")  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="higher"):
        Metric("k", "K", "ms", "A figure.", better="smaller")  # type: ignore[arg-type]


def test_achieved_trial_concurrency(tmp_path):
    from datetime import timedelta

    from analysis.synthetic import T0, write_job, write_trial

    job = write_job(tmp_path / "job", n_concurrent=2)
    for name, start in (("banking-000__a", 0), ("banking-001__b", 5)):
        write_trial(job, name, scenario_id=name[:11], rewards={"tsq": 1.0},
                    started_at=T0 + timedelta(seconds=start), phase_s=(1, 1, 7, 1))
    row = summarize(load(job)).iloc[0]
    assert row["achieved_trial_concurrency"] == approx(20 / 15)  # 0–10 s and 5–15 s
