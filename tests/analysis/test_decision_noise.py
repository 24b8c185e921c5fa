"""The statistics of the decision check on known answers: pairs within and across levels,
the t quantile, intervals that stay open at full agreement, Bonferroni's per-level
confidence, and the non-inferiority verdict."""

from __future__ import annotations

import math

import numpy as np
import pytest

from analysis.consistency import tool_f1
from analysis.decision_noise import (
    drop_bounds,
    full_agreement_bound,
    judge_drop,
    mean_interval,
    pair_mean,
    per_level_confidence,
    scenario_agreements,
    t_quantile,
)

A = [("a", {}), ("b", {})]
B = [("a", {}), ("c", {})]


def test_pairs_within_a_level_and_across_levels():
    assert pair_mean([A, A, B], None, tool_f1) == pytest.approx((1 + 0.5 + 0.5) / 3)
    assert pair_mean([A, B], [A], tool_f1) == pytest.approx((1 + 0.5) / 2)
    assert math.isnan(pair_mean([[], []], None, tool_f1))  # nothing comparable
    assert math.isnan(pair_mean([A], None, tool_f1))  # one repeat: no pair
    (s,) = scenario_agreements({"s": [B, B]}, {"s": [A, A]}, tool_f1)
    assert (s.floor, s.baseline, s.agreement, s.drop) == (1.0, 1.0, 0.5, 0.5)
    (cached,) = scenario_agreements({"s": [B, B]}, {"s": [A, A]}, tool_f1, {"s": 0.9})
    assert cached.baseline == 0.9


def test_t_quantile_matches_tables():
    # Student's t tables: t(0.975, 10) = 2.228, t(0.995, 5) = 4.032, t(0.95, 30) = 1.697
    assert t_quantile(0.975, 10) == pytest.approx(2.228, rel=0.005)
    assert t_quantile(0.995, 5) == pytest.approx(4.032, rel=0.02)
    assert t_quantile(0.95, 30) == pytest.approx(1.697, rel=0.002)
    assert t_quantile(0.975, math.inf) == pytest.approx(1.960, rel=0.001)


def test_intervals_stay_open_when_every_scenario_agrees():
    mean, low, high = mean_interval(np.ones(14))
    assert mean == 1.0 and high == 1.0 and low < 0.9  # not [1, 1]
    lower, upper = drop_bounds(np.zeros(50), 0.99)
    assert lower < 0 < upper
    # more scenarios, tighter: the bound at full agreement falls as ~1/n
    assert full_agreement_bound(100, 0.995) < full_agreement_bound(50, 0.995) / 1.8
    # noisy data are not widened by the floor on the variance
    noisy = np.r_[np.zeros(25), np.full(25, 0.5)]
    assert drop_bounds(noisy, 0.95)[1] == pytest.approx(
        noisy.mean() + t_quantile(0.95, 49) * noisy.std(ddof=1) / math.sqrt(50))


def test_bonferroni_and_the_verdict():
    assert per_level_confidence(0.05, 10) == pytest.approx(0.995)
    from analysis.decision_noise import ScenarioAgreement as S

    same = [S(f"s{i}", 2, 2, 0.95, 0.95, 0.95) for i in range(60)]
    verdict = judge_drop(same, 0.10, 0.995)
    assert verdict.passed and verdict.n == 60 and verdict.drop[0] == 0.0
    worse = [S(f"s{i}", 2, 2, 0.95, 0.95, 0.7) for i in range(60)]
    assert not judge_drop(worse, 0.10, 0.995).passed
    # a scenario without a baseline is left out, not counted as agreement
    partial = [*same[:30], S("x", 2, 1, 1.0, math.nan, 1.0)]
    assert judge_drop(partial, 0.10, 0.995).n == 30
