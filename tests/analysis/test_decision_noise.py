"""The statistic of the decision check on known answers: pair means within and across levels,
repeats that ran side by side left out (through chains of them), the divergence's value on
distributions (0 for the same distribution, first order in a switch, second order in the
amount of noise) and its unbiased estimate, the t quantile, bounds that stay open at full
agreement, and the four outcomes."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from analysis.consistency import tool_f1
from analysis.decision_noise import (
    ScenarioDivergence,
    declines_agree,
    full_agreement_bound,
    judge_divergence,
    mean_bounds,
    mean_interval,
    pair_mean,
    scenario_divergences,
    side_by_side_groups,
)
from analysis.metrics.student_t import t_quantile

A = [("a", {}), ("b", {})]
B = [("a", {}), ("c", {})]
C = [("d", {})]
F1 = declines_agree(tool_f1)


def test_pairs_within_a_level_and_across_levels():
    assert pair_mean([A, A, B], None, F1) == pytest.approx((1 + 0.5 + 0.5) / 3)
    assert pair_mean([A, B], [A], F1) == pytest.approx((1 + 0.5) / 2)
    assert pair_mean([[], []], None, F1) == 1.0  # two declines agree
    assert math.isnan(pair_mean([[], []], None, tool_f1))  # the raw metric cannot say
    assert math.isnan(pair_mean([A], None, F1))  # one repeat: no pair
    # pairs left out: (0, 1) was side by side, so only (0, 2) and (1, 2) count
    assert pair_mean([A, A, B], None, F1, {(0, 1)}) == pytest.approx(0.5)


def test_pair_mean_matches_every_pair_spelled_out():
    rng = np.random.default_rng(3)
    runs = [A, B, C, [], [("a", {"x": 1})]]
    for _ in range(300):
        left = [runs[i] for i in rng.integers(0, 5, rng.integers(0, 7))]
        right = [runs[i] for i in rng.integers(0, 5, rng.integers(0, 5))]
        out = {p for p in itertools.combinations(range(len(left)), 2) if rng.random() < 0.3}
        within = [F1(left[i], left[j]) for i, j in itertools.combinations(range(len(left)), 2)
                  if (i, j) not in out]
        across = [F1(a, b) for a in left for b in right]
        for got, want in ((pair_mean(left, None, F1, out), within),
                          (pair_mean(left, right, F1), across)):
            assert (math.isnan(got) and not want) or got == pytest.approx(np.mean(want))


def test_repeats_chained_side_by_side_form_one_group():
    # 0 met 1 and 1 met 2: 0 and 2 never met, but 2 may repeat 1 which repeated 0
    assert side_by_side_groups(4, {(0, 1), (1, 2)}) == {(0, 1), (0, 2), (1, 2)}
    assert side_by_side_groups(3, set()) == set()


def _calls(names: tuple[str, ...]) -> list:
    return [(name, {}) for name in names]


def _expected(p: dict, q: dict) -> float:
    return sum(wa * wb * F1(_calls(a), _calls(b)) for a, wa in p.items() for b, wb in q.items())


def _divergence(p: dict, q: dict) -> float:
    return (_expected(p, p) + _expected(q, q)) / 2 - _expected(p, q)


T, ALT, WRONG = ("a", "b"), ("a", "c"), ("x", "y")


def test_the_divergence_on_distributions():
    noisy = {T: 0.7, ALT: 0.3}
    assert _divergence(noisy, noisy) == pytest.approx(0.0)
    # a scenario that switches to a trajectory sharing nothing: a full point, as the drop
    assert _divergence({WRONG: 1.0}, {T: 1.0}) == pytest.approx(1.0)
    # more noise toward the same alternative: (p' - p)^2 x (1 - F1(T, ALT)), second order,
    # while the reference's agreement with itself minus the agreement falls first order
    for p, q in ((0.1, 0.3), (0.2, 0.5), (0.0, 0.4)):
        ref, level = {T: 1 - p, ALT: p}, {T: 1 - q, ALT: q}
        assert _divergence(level, ref) == pytest.approx((q - p) ** 2 * 0.5)
        drop = _expected(ref, ref) - _expected(level, ref)
        assert drop == pytest.approx((q - p) * (1 - 2 * p) * 0.5)


def test_the_estimate_is_unbiased_over_every_outcome_of_the_repeats():
    """Two repeats at each level: enumerate every outcome with its probability."""
    ref, level = {T: 0.8, ALT: 0.2}, {T: 0.4, ALT: 0.3, WRONG: 0.3}
    mean = 0.0
    for runs in itertools.product(list(level.items()), repeat=2):
        for refs in itertools.product(list(ref.items()), repeat=2):
            weight = np.prod([w for _, w in (*runs, *refs)])
            (s,) = scenario_divergences({"s": [_calls(t) for t, _ in runs]},
                                        {"s": [_calls(t) for t, _ in refs]}, F1)
            mean += weight * s.divergence
    assert mean == pytest.approx(_divergence(level, ref))


def test_repeats_side_by_side_do_not_count_as_agreement():
    # two repeats that met agree (they shared a batch); the third, apart, did not
    (s,) = scenario_divergences({"s": [A, A, B]}, {"s": [A, B]}, F1,
                                level_overlaps={"s": {(0, 1)}})
    assert s.own == pytest.approx(0.5)  # (0, 2) and (1, 2) only
    (alone,) = scenario_divergences({"s": [A, A]}, {"s": [A, B]}, F1,
                                    level_overlaps={"s": {(0, 1)}})
    assert math.isnan(alone.own) and math.isnan(alone.divergence)  # no pair apart


def test_t_quantile_matches_tables():
    # Student's t tables: t(0.975, 10) = 2.228, t(0.995, 5) = 4.032, t(0.95, 30) = 1.697
    assert t_quantile(0.975, 10) == pytest.approx(2.228, rel=0.005)
    assert t_quantile(0.995, 5) == pytest.approx(4.032, rel=0.02)
    assert t_quantile(0.95, 30) == pytest.approx(1.697, rel=0.002)
    assert t_quantile(0.975, math.inf) == pytest.approx(1.960, rel=0.001)


def test_bounds_stay_open_when_every_scenario_agrees():
    mean, low, high = mean_interval(np.ones(14))
    assert mean == 1.0 and high == 1.0 and low < 0.9  # not [1, 1]
    lower, upper = mean_bounds(np.zeros(50), 0.99)
    assert lower < 0 < upper
    # more scenarios, tighter: the bound at full agreement falls as ~1/n
    assert full_agreement_bound(100, 0.995) < full_agreement_bound(50, 0.995) / 1.8
    # noisy data are not widened by the floor on the variance
    noisy = np.r_[np.zeros(25), np.full(25, 0.5)]
    assert mean_bounds(noisy, 0.95)[1] == pytest.approx(
        noisy.mean() + t_quantile(0.95, 49) * noisy.std(ddof=1) / math.sqrt(50))


def _same(n: int, value: float = 0.9) -> list[ScenarioDivergence]:
    return [ScenarioDivergence(f"s{i}", 2, 2, value, value, value) for i in range(n)]


def test_the_four_outcomes():
    intact = judge_divergence(_same(60), 0.10, 0.995)
    assert intact.outcome == "intact" and intact.n == 60 and intact.divergence[0] == 0.0
    switched = [ScenarioDivergence(f"s{i}", 2, 2, 1.0, 1.0, 0.0 if i < 24 else 1.0)
                for i in range(60)]  # two scenarios in five switched wholly: 0.4
    assert judge_divergence(switched, 0.10, 0.995).outcome == "degraded"
    # one in ten at the margin itself: neither shown under it nor over it
    margin = [ScenarioDivergence(f"s{i}", 2, 2, 1.0, 1.0, 0.0 if i < 6 else 1.0)
              for i in range(60)]
    assert judge_divergence(margin, 0.10, 0.995).outcome == "inconclusive"
    # the bound that shows degradation may be less strict than the one that passes
    near = judge_divergence(switched[:30], 0.10, 0.9999, stop_confidence=0.9)
    assert near.lower > judge_divergence(switched[:30], 0.10, 0.9999).lower
    # too few scenarios to certify anything: inconclusive, not degraded
    assert judge_divergence(_same(14), 0.10, 0.995).outcome == "inconclusive"


def test_nothing_to_compare_is_undecidable_or_inconclusive():
    silent = [ScenarioDivergence(f"s{i}", 2, 2, 1.0, 1.0, 1.0, called=False)
              for i in range(30)]
    verdict = judge_divergence(silent, 0.10, 0.995)
    assert verdict.outcome == "undecidable" and verdict.note == "no tool calls to compare"
    one_repeat = [ScenarioDivergence("s0", 1, 1, math.nan, math.nan, 1.0)]
    few = judge_divergence(one_repeat, 0.10, 0.99)
    assert few.outcome == "inconclusive" and "fewer than 2 repeats" in few.note
    together = [ScenarioDivergence("s0", 2, 2, math.nan, 1.0, 1.0)]
    assert "side by side" in judge_divergence(together, 0.10, 0.99).note
    # a scenario without a reference is left out, not counted as agreement
    partial = [*_same(30), ScenarioDivergence("x", 2, 1, 1.0, math.nan, 1.0)]
    assert judge_divergence(partial, 0.10, 0.995).n == 30
