"""The search on recorded steps: doubling until a level fails, bisecting to adjacent levels,
inconclusive levels that climb on but bound the answer, the caps, the checks a level is judged
by (SLO names, the divergence of its decisions, printed beside its bound), the boundary
interval, the limiting check, cliffs and the headline (statistic, reference, achieved
concurrency, repeats per level, inconclusive levels)."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pandas as pd
import pytest

from analysis.decision_noise import ScenarioDivergence
from bankbench.capacity.checks import (
    achieved_check,
    decision_check,
    judge,
    level_verdict,
    slo_value,
    within_noise,
)
from bankbench.capacity.output import headline
from bankbench.capacity.search import (
    bracket,
    describe,
    levels_judgeable,
    limiting,
    next_level,
)
from contracts.capacity import (
    DEFAULT_LOST_RATE,
    CapacityRecord,
    CapacitySearch,
    CapacityStep,
    Check,
    DecisionFigures,
    Design,
    Interval,
    slo_column,
)


def _step(level: int, passed: bool, verdict: str | None = None) -> CapacityStep:
    verdict = verdict or ("pass" if passed else "fail")
    return CapacityStep(level=level, phase="bracket", verdict=verdict,
                        passed=verdict == "pass", reused=False, checks=[], seconds=0,
                        at=datetime.now(UTC))


def _walk(frontier: int, search: CapacitySearch, ceiling: int = 1000,
          unsure: set[int] = frozenset()) -> list[int]:
    """The levels tried when every level up to `frontier` passes (those in `unsure` stay
    inconclusive)."""
    steps: list[CapacityStep] = []
    while (level := next_level(steps, search, ceiling)[0]) is not None:
        steps.append(_step(level, level <= frontier,
                           "inconclusive" if level in unsure else None))
    return [s.level for s in steps]


def test_brackets_by_doubling_then_bisects_to_the_frontier():
    search = CapacitySearch(slos={"ttft_p90_ms": 500})
    assert _walk(11, search) == [1, 2, 4, 8, 16, 12, 10, 11]
    steps = [_step(lv, lv <= 11) for lv in _walk(11, search)]
    assert bracket(steps) == (11, 12)
    assert next_level(steps, search, 1000) == (None, "bracketed")


def test_stops_at_max_level_or_task_count_and_when_nothing_passes():
    search = CapacitySearch(max_level=6)
    assert _walk(100, search) == [1, 2, 4, 6]
    assert _walk(100, CapacitySearch(), ceiling=10) == [1, 2, 4, 8, 10]
    steps = [_step(1, False)]
    assert next_level(steps, CapacitySearch(), 100) == (None, "no passing level")
    # a start above the frontier bisects downwards
    assert _walk(3, CapacitySearch(start=8)) == [8, 4, 2, 3]


def test_a_pass_above_a_failure_does_not_move_the_answer():
    steps = [_step(1, True), _step(2, True), _step(4, False), _step(8, True)]
    assert bracket(steps) == (2, 4)


def test_an_inconclusive_level_climbs_on_and_bounds_the_answer():
    search = CapacitySearch(max_level=64)
    # 16 stays inconclusive, nothing fails: the climb goes on to the top, then bisects
    # below 16 (the capacity cannot rest on it)
    walked = _walk(1000, search, unsure={16})
    assert walked == [1, 2, 4, 8, 16, 32, 64]  # 32 and 64 pass: monotone, 16 was noise
    walked = _walk(1000, search, unsure={16, 32, 64})
    assert walked == [1, 2, 4, 8, 16, 32, 64, 12, 14, 15]
    steps = [_step(lv, True, "inconclusive" if lv >= 16 else None) for lv in walked]
    assert bracket(steps) == (15, None)
    assert next_level(steps, search, 1000) == (None, "inconclusive")
    # an inconclusive level between a pass and a failure bounds the bisection like a failure
    assert _walk(40, search, unsure={32}) == [1, 2, 4, 8, 16, 32, 64, 24, 28, 30, 31]


def test_no_sequence_of_outcomes_judges_more_levels_than_k():
    import random

    rng = random.Random(1)
    for top in (8, 28, 64, 100):
        search = CapacitySearch(max_level=top)
        k = levels_judgeable(search, 10**6)
        for _ in range(400):
            steps: list[CapacityStep] = []
            while (level := next_level(steps, search, 10**6)[0]) is not None:
                steps.append(_step(level, True, rng.choice(["pass", "fail", "inconclusive"])))
            assert len(steps) <= k


def test_slo_names():
    assert slo_column("ttft_p90_ms") == "ttft_ms_p90"
    assert slo_column("inter_token_latency_p99_ms") == "tpot_ms_p99"  # AIPerf's name = TPOT
    assert slo_column("server_ttft_p50_ms") == "server_ttft_ms_p50"
    with pytest.raises(ValueError, match="ttft_p90_ms"):
        slo_column("ttft_p90")
    with pytest.raises(ValueError):
        CapacitySearch(slos={"latency": 3})


def _agreeing(n: int, drop_in: int = 0, floor: float = 1.0) -> list[ScenarioDivergence]:
    """n scenarios agreeing `floor` with themselves; the first `drop_in` of them switched
    wholly (agreement with the reference 0)."""
    return [ScenarioDivergence(f"s{i}", 2, 2, floor, floor, 0.0 if i < drop_in else floor)
            for i in range(n)]


CONFIDENCE = (0.995, 0.98)


def test_slo_values_and_the_decision_check():
    search = CapacitySearch(slos={"ttft_p90_ms": 500, "error_rate": 0.01,
                                  "server_ttft_p50_ms": 100})
    summary = pd.Series({"ttft_ms_p90": 400.0})
    requests = pd.DataFrame({"ok": [True] * 48 + [False], "overloaded": [0] * 49,
                             "server_ttft_ms": [50.0] * 24 + [70.0] * 24 + [999.0]})
    values = {n: slo_value(n, summary, requests, 0.25) for n in search.slos}
    assert values == {"ttft_p90_ms": 400.0, "error_rate": 1 / 49, "server_ttft_p50_ms": 60.0,
                      "lost_rate": 0.25}  # failed requests left out; lost_rate by default
    checks = {c.name: c for c in judge(search, values, _agreeing(60), False, CONFIDENCE)[0]}
    assert checks["ttft_p90_ms"].passed and not checks["error_rate"].passed
    assert not checks["lost_rate"].passed and checks["lost_rate"].limit == DEFAULT_LOST_RATE
    assert checks["tool_f1_divergence"].passed  # 60 scenarios, all agree: bound under 0.10
    # one scenario in eight switched wholly: 0.125, not shown beyond a 0.10 margin (within
    # noise: inconclusive); two in five are shown beyond it
    within = decision_check(search, _agreeing(60, drop_in=7), False, *CONFIDENCE)[0]
    assert not within.passed and not within.confident and within.value > 0.1
    assert level_verdict([within]) == "inconclusive"
    beyond = decision_check(search, _agreeing(60, drop_in=24), False, *CONFIDENCE)[0]
    assert not beyond.passed and beyond.confident and level_verdict([beyond]) == "fail"
    # the check prints the estimate and the bound compared, each under its own name
    line = describe([within])
    assert line.startswith(f"tool_f1_divergence {within.value:.3g} (bound {within.bound:.3g})")
    assert line.endswith("< 0.1 within noise")


def test_overload_replies_are_server_errors_even_when_a_retry_succeeded():
    requests = pd.DataFrame({"ok": [True, True, True, False], "overloaded": [0, 2, 0, 0]})
    summary = pd.Series(dtype=float)
    assert slo_value("error_rate", summary, requests, 0.0) == 0.5
    assert slo_value("overload_rate", summary, requests, 0.0) == 0.25


def test_full_agreement_is_not_certainty_and_one_divergence_is_not_a_failure():
    search = CapacitySearch()
    # 14 scenarios all agreeing cannot certify a 10-point margin; the check says so as a
    # failure within noise, not beyond it
    small, verdict = decision_check(search, _agreeing(14), False, *CONFIDENCE)
    assert not small.passed and not small.confident and verdict.upper > 0.1
    assert verdict.across[1] < 1.0  # the interval stays open at full agreement
    # with 60, one switched scenario does not fail the level
    assert decision_check(search, _agreeing(60, drop_in=1), False, *CONFIDENCE)[0].passed


def _silent(n: int) -> list[ScenarioDivergence]:
    return [ScenarioDivergence(f"s{i}", 2, 2, 1.0, 1.0, 1.0, called=False) for i in range(n)]


def test_no_tool_calls_is_not_consistency():
    """A model that never calls a tool made no decision: the check fails beyond noise and
    says so, at the reference level too."""
    search = CapacitySearch()
    for is_reference in (True, False):
        check, _ = decision_check(search, _silent(30), is_reference, *CONFIDENCE)
        assert not check.passed and check.note == "no tool calls to compare"
        assert level_verdict([check]) == "fail"
    one_repeat = [ScenarioDivergence("s0", 1, 1, math.nan, math.nan, 1.0)]
    assert "fewer than 2 repeats" in decision_check(search, one_repeat, False,
                                                    *CONFIDENCE)[0].note


def test_a_search_of_a_model_that_never_calls_a_tool_says_so():
    search = CapacitySearch(slos={"ttft_p90_ms": 500})
    checks, figures, verdict, _ = judge(search, {"ttft_p90_ms": 100.0, "lost_rate": 0.0},
                                        _silent(30), True, CONFIDENCE)
    step = CapacityStep(level=1, phase="bracket", verdict=verdict, passed=verdict == "pass",
                        reused=False, checks=checks, decisions=figures, seconds=0,
                        at=datetime.now(UTC))
    capacity, failing = bracket([step])
    record = CapacityRecord(search=search, steps=[step], capacity=capacity,
                            lowest_failing=failing, limiting=limiting([step], failing))
    line = headline(record)
    assert line.startswith("0 concurrent agents") and "no tool calls to compare" in line


def test_min_tsq_is_an_absolute_floor():
    search = CapacitySearch(min_tsq=0.7)
    checks = {c.name: c for c in judge(search, {"lost_rate": 0.0}, _agreeing(60), False,
                                        CONFIDENCE, tsq=0.65)[0]}
    assert not checks["min_tsq"].passed and checks["min_tsq"].value == 0.65
    unlabelled = judge(search, {"lost_rate": 0.0}, _agreeing(60), False, CONFIDENCE,
                       tsq=None)[0]
    assert not {c.name: c for c in unlabelled}["min_tsq"].passed


def test_a_level_that_did_not_hold_its_load_is_neither_certified_nor_a_failure():
    """Achieved concurrency under the bound: the level is not certified (inconclusive, so
    the climb goes on and the answer never rests on it), more repeats are not asked for when
    its decisions were decided, and an SLO broken there still fails it."""
    search = CapacitySearch(slos={"ttft_p90_ms": 500})
    short = achieved_check(0.8, 0.9, "achieved 0.80 of configured concurrency < 0.90")
    checks, _, verdict, _ = judge(search, {"ttft_p90_ms": 300, "lost_rate": 0.0},
                                  _agreeing(60), False, CONFIDENCE, extra=[short])
    assert verdict == "inconclusive"
    assert not any(within_noise(c) for c in checks)  # decided: no more looks for it
    held = achieved_check(0.95, 0.9, None)
    assert judge(search, {"ttft_p90_ms": 300, "lost_rate": 0.0}, _agreeing(60), False,
                 CONFIDENCE, extra=[held])[2] == "pass"
    assert judge(search, {"ttft_p90_ms": 900, "lost_rate": 0.0}, _agreeing(60), False,
                 CONFIDENCE, extra=[short])[2] == "fail"
    assert level_verdict([achieved_check(None, 0.9, "no steady window (too few trials for "
                                         "the level's slots)")]) == "inconclusive"
    record = CapacityRecord(search=search, reference="c2", capacity=2, inconclusive=[4],
                            steps=[_step(1, True), _step(2, True),
                                   _step(4, False, "inconclusive")])
    record.steps[2].checks = checks
    record.steps[2].repeats = 2
    assert ("inconclusive (not certified, not failed): c4 (2 repeats: achieved 0.80 of "
            "configured concurrency < 0.90)") in headline(record)


def test_levels_judgeable_covers_every_frontier():
    search = CapacitySearch(max_level=64)
    # 1..64 by doubling (7), then up to 5 bisections of the last gap (32..64)
    assert levels_judgeable(search, 10**6) == 12
    assert levels_judgeable(CapacitySearch(max_level=8), 4) == 3 + 1  # 1, 2, 4 and 3


def _judged(level: int, passed: bool, ttft: float, drop: float, confident: bool = True,
            repeats: int = 2, achieved: float | None = None) -> CapacityStep:
    interval = Interval(mean=drop, low=drop - 0.05, high=drop + 0.05)
    figures = DecisionFigures(metric="tool_f1", reference="c2", scenarios=50, own=interval,
                              reference_own=interval, across=interval, divergence=interval,
                              drop=interval, upper=drop + 0.04, lower=drop - 0.04,
                              confidence=0.99)
    checks = [Check(name="ttft_p90_ms", value=ttft, limit=500, passed=ttft <= 500),
              Check(name="tool_f1_divergence", value=drop, bound=drop + 0.04, limit=0.1,
                    passed=drop + 0.04 < 0.1, confident=confident)]
    return CapacityStep(level=level, phase="bracket", verdict=level_verdict(checks),
                        passed=passed, reused=False, checks=checks, decisions=figures,
                        repeats=repeats, achieved_concurrency=achieved, seconds=0,
                        at=datetime.now(UTC))


def test_boundary_limiting_cliffs_and_the_headline():
    from bankbench.capacity.sequential import refresh

    steps = [_judged(1, True, 100, 0.0), _judged(2, True, 120, 0.0),
             _judged(4, False, 130, 0.08, confident=False, repeats=8),  # within noise
             _judged(3, True, 125, 0.01, achieved=2.9), _judged(8, False, 700, 0.3)]
    record = CapacityRecord(search=CapacitySearch(slos={"ttft_p90_ms": 500}), steps=steps,
                            reference="c2")
    refresh(record)
    assert (record.capacity, record.lowest_failing, record.inconclusive) == (3, 8, [4])
    assert record.boundary_high == 8  # c4 inconclusive, c8 failed beyond noise
    # what failed c8 beyond noise; c4's open decisions are named with it as inconclusive
    assert record.limiting == ["ttft_p90_ms", "tool_f1_divergence"]
    assert record.achieved_concurrency == 2.9
    assert any(c.startswith("ttft_p90_ms x5.4 from c4 to c8") for c in record.cliffs)
    assert any(c.startswith("decision divergence +0.22 from c4 to c8") for c in record.cliffs)
    line = headline(record)
    assert line.startswith("3 concurrent agents (achieved 2.9) within SLO ttft_p90_ms≤500, "
                           "lost_rate≤0.05 with decisions intact (tool_f1 divergence of "
                           "decision distributions from reference c2 < 0.1")
    assert "capacity in [3, c8), limited by ttft_p90_ms, tool_f1_divergence at c8" in line
    assert ("inconclusive (not certified, not failed): c4 (8 repeats: decisions neither "
            "shown intact nor degraded)") in line
    assert "repeats per level c1:2 c2:2 c3:2 c4:8 c8:2" in line and "cliff:" in line


def test_headline_says_when_the_design_cannot_support_the_claim():
    search = CapacitySearch(slos={"ttft_p90_ms": 500})
    weak = Design(scenarios=14, repeats=2, max_looks=3, levels_judgeable=10,
                  confidence=0.998, best_bound=0.21)
    line = headline(CapacityRecord(search=search, capacity=4, lowest_failing=5, design=weak))
    assert line.startswith("Not enough scenarios to certify a decision divergence under 0.1: "
                           "14 scenarios bound it at 0.21")
    small = weak.model_copy(update={"scenarios": 30, "best_bound": 0.08})
    line = headline(CapacityRecord(search=search, capacity=4, lowest_failing=5, design=small))
    assert line.startswith("Below the validated design: 30 scenarios")


def test_headline_per_gpu():
    record = CapacityRecord(search=CapacitySearch(slos={"ttft_p90_ms": 500}, gpus=4),
                            capacity=12, lowest_failing=13, stopped_because="bracketed")
    line = headline(record)
    assert line.startswith("12 concurrent agents (achieved concurrency not measured) within "
                           "SLO ttft_p90_ms≤500")
    assert "3 per GPU on 4 GPUs" in line


def test_the_record_says_whether_the_server_was_batch_invariant():
    from bankbench.capacity.run import _deterministic
    from contracts.sweep import SweepConfig

    on = SweepConfig(levels=[1], profile="gpu-vllm", server_options={"deterministic": "true"})
    off = SweepConfig(levels=[1], profile="gpu-sglang")
    elsewhere = SweepConfig(levels=[1], base_url="http://127.0.0.1:9/v1", model="m")
    assert (_deterministic(on), _deterministic(off), _deterministic(elsewhere)) == (
        True, False, None)
    search = CapacitySearch(slos={"ttft_p90_ms": 500})
    line = headline(CapacityRecord(search=search, capacity=4, lowest_failing=5,
                                   deterministic=False))
    assert "server not batch-invariant" in line
    assert "batch-invariant" not in headline(CapacityRecord(search=search, capacity=4))


def test_headline_of_one_agent_is_singular():
    record = CapacityRecord(search=CapacitySearch(slos={"ttft_p90_ms": 500}),
                            capacity=1, lowest_failing=2, stopped_because="bracketed")
    assert headline(record).startswith("1 concurrent agent (achieved")


def test_the_limiting_check_is_what_failed_beyond_noise_not_what_stayed_within_it():
    """Two scenarios leave every level's decisions within noise: c1 inconclusive, c2 failed
    by its tool-call error rate. The limit is that rate at c2, not the open decision check
    (of either level)."""
    from bankbench.capacity.sequential import refresh

    def step(level: int, rate: float) -> CapacityStep:
        checks = [Check(name="tool_call_error_rate", value=rate, limit=0.01,
                        passed=rate <= 0.01),
                  Check(name="tool_f1_divergence", value=0.0, bound=0.6, limit=0.1,
                        passed=False, confident=False)]
        return CapacityStep(level=level, phase="bracket", verdict=level_verdict(checks),
                            passed=False, reused=False, checks=checks, repeats=2, seconds=0,
                            at=datetime.now(UTC))

    record = CapacityRecord(search=CapacitySearch(slos={"tool_call_error_rate": 0.01}),
                            steps=[step(1, 0.0), step(2, 0.5)], reference="c1")
    refresh(record)
    assert [s.verdict for s in record.steps] == ["inconclusive", "fail"]
    assert (record.capacity, record.boundary_high) == (None, 2)
    assert record.limiting == ["tool_call_error_rate"]
    line = headline(record)
    assert "limited by tool_call_error_rate at c2" in line
    assert "inconclusive (not certified, not failed): c1" in line
    # with no failure above the capacity, the level that did not pass names what it lacked
    only = CapacityRecord(search=record.search, steps=[step(1, 0.0)], reference="c1")
    refresh(only)
    assert only.limiting == ["tool_f1_divergence"]


def test_the_headline_says_where_tool_calls_start_breaking():
    import numpy as np

    from analysis.metrics.integrity import ANY_COLUMN, COLUMNS
    from bankbench.capacity.run import integrity_worse

    rng = np.random.default_rng(0)
    rows = []
    for level, rate in ((1, 0.0), (2, 0.0), (4, 0.5)):
        for i in range(96):
            fail = float(rng.random() < rate)
            rows.append({"source": "s", "level": level, "scenario_id": f"sc{i % 12}",
                         "start_unix_ns": i, **dict.fromkeys(COLUMNS, 0.0),
                         "tc_markup_in_content": fail, ANY_COLUMN: fail})
    worse = integrity_worse(pd.DataFrame(rows))
    assert worse == {4: ["tc_markup_in_content", "tool_call_error_rate"]}
    steps = [_judged(1, True, 100, 0.0), _judged(2, True, 120, 0.0),
             _judged(4, False, 700, 0.0)]
    for s in steps:
        s.integrity_worse = worse.get(s.level, [])
    record = CapacityRecord(search=CapacitySearch(slos={"ttft_p90_ms": 500}), steps=steps,
                            reference="c2")
    from bankbench.capacity.sequential import refresh

    refresh(record)
    assert "; tool calls break from c4: tc_markup_in_content" in headline(record)
    for s in steps:
        s.integrity_worse = []
    assert "tool calls break" not in headline(record)


def test_a_level_run_on_a_saturated_host_is_warned_about_as_the_sweep_report_does():
    from analysis.metrics.host import saturation_warnings
    from bankbench.capacity.output import saturation_line
    from bankbench.capacity.sequential import refresh

    steps = [_judged(1, True, 100, 0.0), _judged(2, True, 120, 0.0),
             _judged(4, False, 700, 0.0)]
    steps[0].host_cpu_busy, steps[0].host_other_cpu = 0.95, 0.6  # saturated
    steps[1].host_cpu_busy, steps[1].host_other_cpu = 0.89, 0.1  # just under the bound
    # c4 not sampled (an older capacity.json): no figure, no warning
    record = CapacityRecord(search=CapacitySearch(slos={"ttft_p90_ms": 500}), steps=steps,
                            reference="c2")
    refresh(record)
    # the sweep report's rule and words on the same figures
    summary = pd.DataFrame({"source": "s", "level": [1, 2],
                            "host_cpu_busy": [0.95, 0.89], "host_other_cpu": [0.6, 0.1]})
    [expected] = saturation_warnings(summary)
    assert expected.startswith("WARNING: the client host's CPU was saturated at c1 (95% busy, "
                               "other work 60%)")
    assert saturation_line([steps[0]]) == expected  # the level's own line
    assert saturation_line([steps[1]]) is None and saturation_line([steps[2]]) is None
    line = headline(record)
    assert line.startswith("2 concurrent agents") and line.endswith(f"; {expected}")
    assert "\n" not in line  # still the output's one last line
    for s in steps:
        s.host_cpu_busy = 0.5
    assert "WARNING" not in headline(record)
