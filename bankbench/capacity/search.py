"""Which level to try next, and whether a measured level passes: plain functions on records.

The search assumes the checks fail monotonically as load grows: it doubles from `start` until a
level fails (bracket), then bisects between the highest passing level below it and it. A level
that passes above a failing one does not move the answer (it is kept in capacity.json).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from contracts.capacity import CapacitySearch, CapacityStep, Check, slo_column


def bracket(steps: list[CapacityStep]) -> tuple[int | None, int | None]:
    """(highest passing level below the lowest failing one, lowest failing level)."""
    failing = min((s.level for s in steps if not s.passed), default=None)
    passing = [s.level for s in steps if s.passed and (failing is None or s.level < failing)]
    return max(passing, default=None), failing


def next_level(steps: list[CapacityStep], search: CapacitySearch, ceiling: int
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


def _stat(values: pd.Series, stat: str) -> float:
    v = values.dropna().to_numpy(dtype=float)
    if v.size == 0:
        return math.nan
    return float(v.mean()) if stat == "mean" else float(np.percentile(v, int(stat[1:])))


def slo_value(name: str, summary_row: pd.Series, requests: pd.DataFrame,
              consistency_row: pd.Series | None) -> float:
    """The level's measured value for one SLO name (contracts.capacity.slo_column)."""
    column = slo_column(name)
    if name == "error_rate":
        n = summary_row.get("n_requests", 0)
        return float(summary_row["n_failed_requests"] / n) if n else math.nan
    if name == "lost_rate":
        return float(consistency_row["lost"]) if consistency_row is not None else math.nan
    if column in summary_row.index:
        return float(summary_row[column])
    base, _, stat = column.rpartition("_")  # a request column summary does not spread
    ok = requests[requests["ok"].astype(bool)]
    return _stat(ok[base], stat) if base in ok else math.nan


def judge(search: CapacitySearch, summary_row: pd.Series, requests: pd.DataFrame,
          consistency_row: pd.Series | None, is_reference: bool) -> list[Check]:
    """Every bound of the search at one level; a level passes when all checks pass."""
    checks = []
    for name, limit in search.slos.items():
        value = slo_value(name, summary_row, requests, consistency_row)
        ok = not math.isnan(value) and value <= limit
        checks.append(Check(name=name, value=None if math.isnan(value) else value, limit=limit,
                            passed=ok, note="" if not math.isnan(value) else "nothing measured"))
    key = search.agreement_metric
    name = f"{key}_ci_low"
    if is_reference:
        checks.append(Check(name=name, value=1.0, limit=search.min_agreement, passed=True,
                            note="reference level"))
        return checks
    low = math.nan if consistency_row is None else float(consistency_row[f"{key}_ci_low"])
    note = ""
    if math.isnan(low) and consistency_row is not None:
        low, note = float(consistency_row[key]), "one scenario: mean judged, no interval"
    ok = not math.isnan(low) and low >= search.min_agreement
    checks.append(Check(name=name, value=None if math.isnan(low) else low,
                        limit=search.min_agreement, passed=ok,
                        note=note or ("" if not math.isnan(low) else "no pair to compare")))
    return checks


def describe(checks: list[Check]) -> str:
    """`ttft_p90_ms 312 ≤ 500 ok, tool_f1_ci_low 0.62 ≥ 0.9 FAIL`."""
    parts = []
    for c in checks:
        sign = "≥" if c.name.endswith("_ci_low") else "≤"
        value = "n/a" if c.value is None else f"{c.value:.3g}"
        parts.append(f"{c.name} {value} {sign} {c.limit:g} {'ok' if c.passed else 'FAIL'}")
    return ", ".join(parts)
