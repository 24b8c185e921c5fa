"""The search on recorded steps: doubling until a level fails, bisecting to adjacent levels,
the caps, and the checks a level is judged by (SLO names, the agreement's interval)."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd
import pytest

from bankbench.capacity.output import headline
from bankbench.capacity.search import bracket, judge, next_level
from contracts.capacity import CapacityRecord, CapacitySearch, CapacityStep, slo_column


def _step(level: int, passed: bool) -> CapacityStep:
    return CapacityStep(level=level, phase="bracket", passed=passed, reused=False, checks=[],
                        seconds=0, at=datetime.now(UTC))


def _walk(frontier: int, search: CapacitySearch, ceiling: int = 1000) -> list[int]:
    """The levels tried when every level up to `frontier` passes."""
    steps: list[CapacityStep] = []
    while (level := next_level(steps, search, ceiling)[0]) is not None:
        steps.append(_step(level, level <= frontier))
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


def test_slo_names():
    assert slo_column("ttft_p90_ms") == "ttft_ms_p90"
    assert slo_column("inter_token_latency_p99_ms") == "tpot_ms_p99"  # AIPerf's name = TPOT
    assert slo_column("server_ttft_p50_ms") == "server_ttft_ms_p50"
    with pytest.raises(ValueError, match="ttft_p90_ms"):
        slo_column("ttft_p90")
    with pytest.raises(ValueError):
        CapacitySearch(slos={"latency": 3})


def test_judge_uses_the_lower_end_of_the_agreement_interval():
    search = CapacitySearch(slos={"ttft_p90_ms": 500, "error_rate": 0.01,
                                  "server_ttft_p50_ms": 100}, min_agreement=0.9)
    summary = pd.Series({"ttft_ms_p90": 400.0, "n_requests": 100, "n_failed_requests": 2})
    requests = pd.DataFrame({"ok": [True, True, False], "server_ttft_ms": [50.0, 70.0, 999.0]})
    consistent = pd.Series({"tool_f1": 0.97, "tool_f1_ci_low": 0.93, "lost": 0.0})
    checks = {c.name: c for c in judge(search, summary, requests, consistent, False)}
    assert checks["ttft_p90_ms"].passed and checks["ttft_p90_ms"].value == 400
    assert not checks["error_rate"].passed and checks["error_rate"].value == 0.02
    assert checks["server_ttft_p50_ms"].value == 60.0  # failed requests left out
    assert checks["tool_f1_ci_low"].passed
    wide = pd.Series({"tool_f1": 0.95, "tool_f1_ci_low": 0.7, "lost": 0.0})
    low = {c.name: c for c in judge(search, summary, requests, wide, False)}["tool_f1_ci_low"]
    assert not low.passed  # the mean clears the bar, its interval does not


def test_headline_per_gpu():
    record = CapacityRecord(search=CapacitySearch(slos={"ttft_p90_ms": 500}, gpus=4),
                            capacity=12, lowest_failing=13, stopped_because="bracketed")
    line = headline(record)
    assert line.startswith("12 concurrent agents within SLO ttft_p90_ms≤500")
    assert "3 per GPU on 4 GPUs" in line
