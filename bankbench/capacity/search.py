"""Which level to try next, and whether a measured level passes: plain functions on records.

The search assumes the checks fail monotonically as load grows: it doubles from `start` until a
level fails (bracket), then bisects between the highest passing level below it and it. A level
that passes above a failing one does not move the answer (it is kept in capacity.json).
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pandas as pd

from analysis.decision_noise import ScenarioAgreement, judge_drop
from analysis.metrics.throughput import failed_and_counted
from contracts.capacity import (
    CapacitySearch,
    CapacityStep,
    Check,
    DecisionFigures,
    Interval,
    slo_column,
)


def bracket(steps: list) -> tuple[int | None, int | None]:
    """(highest passing level below the lowest failing one, lowest failing level)."""
    failing = min((s.level for s in steps if not s.passed), default=None)
    passing = [s.level for s in steps if s.passed and (failing is None or s.level < failing)]
    return max(passing, default=None), failing


def next_level(steps: list, search: CapacitySearch, ceiling: int
               ) -> tuple[int | None, str]:
    """(level to run next and its phase) or (None, why the search ends)."""
    top = min(search.max_level, ceiling)
    best, failing = bracket(steps)
    if failing is None:
        if best is None:
            return min(search.start, top), "bracket"
        if best >= top:
            return None, "max_level"
        return min(best * 2, top), "bracket"
    low = best or 0
    if failing - low <= 1:
        return None, "bracketed" if best is not None else "no passing level"
    return (low + failing) // 2, "bisect"


def levels_judgeable(search: CapacitySearch, ceiling: int) -> int:
    """K: the most levels this search can judge, over every place the frontier can be
    (each level's decision test runs at confidence 1 - alpha/K)."""
    top = min(search.max_level, ceiling)
    worst = 1
    for frontier in range(0, top + 1):
        steps: list = []
        while (level := next_level(steps, search, ceiling)[0]) is not None:
            steps.append(SimpleNamespace(level=level, passed=level <= frontier))
        worst = max(worst, len(steps))
    return worst


def _stat(values: pd.Series, stat: str) -> float:
    v = values.dropna().to_numpy(dtype=float)
    if v.size == 0:
        return math.nan
    return float(v.mean()) if stat == "mean" else float(np.percentile(v, int(stat[1:])))


def slo_value(name: str, summary_row: pd.Series, requests: pd.DataFrame, lost: float
              ) -> float:
    """The level's measured value for one SLO name (contracts.capacity.slo_column); `lost`
    is the share of trials lost to the server (analysis.consistency)."""
    column = slo_column(name)
    if name in ("error_rate", "overload_rate"):
        # Overload replies (429/529) are the server's errors even when a retry succeeded.
        # Requests an interruption cancelled are nobody's errors: left out (analysis.tables).
        failed, counted = failed_and_counted(requests)
        over = (requests["overloaded"].fillna(0).to_numpy() > 0 if "overloaded" in requests
                else np.zeros(len(requests), dtype=bool))
        hit = failed | over if name == "error_rate" else over
        return float(hit[counted].mean()) if counted.any() else math.nan
    if name == "lost_rate":
        return lost
    if column in summary_row.index:
        return float(summary_row[column])
    base, _, stat = column.rpartition("_")  # a request column summary does not spread
    ok = requests[requests["ok"].astype(bool)]
    return _stat(ok[base], stat) if base in ok else math.nan


def _interval(values: tuple[float, float, float]) -> Interval:
    def clean(v: float) -> float | None:
        return None if math.isnan(v) else v

    return Interval(mean=clean(values[0]), low=clean(values[1]), high=clean(values[2]))


def judge_decisions(search: CapacitySearch, scenarios: list[ScenarioAgreement],
                    is_reference: bool, confidence: float) -> tuple[Check, DecisionFigures]:
    """The decision check of one level: its drop below the reference's own agreement is
    under --max-drop (non-inferiority at `confidence`). The reference level passes when it
    has something to compare (≥ 2 repeats of scenarios that called tools)."""
    verdict = judge_drop(scenarios, search.max_drop, confidence)
    figures = DecisionFigures(
        metric=search.agreement_metric, scenarios=verdict.n, floor=_interval(verdict.floor),
        baseline=_interval(verdict.baseline), agreement=_interval(verdict.agreement),
        drop=_interval(verdict.drop),
        drop_upper=None if math.isnan(verdict.drop_upper) else verdict.drop_upper,
        drop_lower=None if math.isnan(verdict.drop_lower) else verdict.drop_lower,
        confidence=confidence)
    name = f"{search.agreement_metric}_drop"
    if is_reference:
        return Check(name=name, value=None, limit=search.max_drop, passed=verdict.n > 0,
                     note=verdict.note or "reference level"), figures
    confident = figures.drop_lower is not None and figures.drop_lower >= search.max_drop
    return Check(name=name, value=figures.drop_upper, limit=search.max_drop,
                 passed=verdict.passed, confident=confident or verdict.n == 0,
                 note=verdict.note), figures


def judge(search: CapacitySearch, slo_values: dict[str, float],
          scenarios: list[ScenarioAgreement], is_reference: bool, confidence: float,
          tsq: float | None = None) -> tuple[list[Check], DecisionFigures]:
    """Every bound of the search at one level; a level passes when all checks pass."""
    checks = []
    for name, limit in search.slos.items():
        value = slo_values.get(name, math.nan)
        ok = not math.isnan(value) and value <= limit
        checks.append(Check(name=name, value=None if math.isnan(value) else value, limit=limit,
                            passed=ok, note="" if not math.isnan(value) else "nothing measured"))
    if search.min_tsq is not None:
        known = tsq is not None and not math.isnan(tsq)
        checks.append(Check(name="min_tsq", value=tsq if known else None,
                            limit=search.min_tsq, passed=known and tsq >= search.min_tsq,
                            note="" if known else "no TSQ (labels?)"))
    decision, figures = judge_decisions(search, scenarios, is_reference, confidence)
    return [*checks, decision], figures


def _sign(name: str) -> str:
    return "<" if name.endswith("_drop") else "≥" if name == "min_tsq" else "≤"


def describe(checks: list[Check]) -> str:
    """`ttft_p90_ms 312 ≤ 500 ok, tool_f1_drop 0.23 < 0.1 FAIL`."""
    parts = []
    for c in checks:
        value = "n/a" if c.value is None else f"{c.value:.3g}"
        verdict = "ok" if c.passed else "FAIL" if c.confident else "FAIL (within noise)"
        note = f" ({c.note})" if c.note and not c.passed else ""
        parts.append(f"{c.name} {value} {_sign(c.name)} {c.limit:g} {verdict}{note}")
    return ", ".join(parts)


CLIFF_RATIO = 2.0  # an SLO figure that at least doubles from one judged level to the next


def boundary(steps: list[CapacityStep], capacity: int | None) -> int | None:
    """The lowest level above the capacity that failed beyond noise (None: none did)."""
    shown = [s.level for s in steps if not s.passed and (capacity is None or s.level > capacity)
             and any(not c.passed and c.confident for c in s.checks)]
    return min(shown, default=None)


def limiting(steps: list[CapacityStep], lowest_failing: int | None) -> list[str]:
    """The checks that failed at the lowest failing level, each with its note when it has one
    (`tool_f1_drop (no tool calls to compare)`)."""
    step = next((s for s in steps if s.level == lowest_failing), None)
    return [f"{c.name} ({c.note})" if c.note else c.name
            for c in step.checks if not c.passed] if step else []


def cliffs(steps: list[CapacityStep], max_drop: float) -> list[str]:
    """Where a figure jumps between adjacent judged levels: an SLO value that grows
    CLIFF_RATIO-fold, or a decision drop that grows by the margin or more."""
    ordered = sorted({s.level: s for s in steps}.values(), key=lambda s: s.level)
    out = []
    for a, b in zip(ordered, ordered[1:], strict=False):
        before = {c.name: c.value for c in a.checks}
        for c in b.checks:
            was = before.get(c.name)
            if c.value is None or was is None:
                continue
            if c.name.endswith("_drop"):
                continue
            if was > 0 and c.value / was >= CLIFF_RATIO and c.name != "min_tsq":
                out.append(f"{c.name} x{c.value / was:.1f} from c{a.level} to c{b.level}")
        da = a.decisions.drop.mean if a.decisions else None
        db = b.decisions.drop.mean if b.decisions else None
        if da is not None and db is not None and db - da >= max_drop:
            out.append(f"decision drop +{db - da:.2f} from c{a.level} to c{b.level}")
    return out
