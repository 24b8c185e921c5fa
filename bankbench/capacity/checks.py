"""The checks one level is judged by: each SLO bound on its measured value, the decision check
(the divergence of its decisions from the reference's, analysis/decision_noise.py), the
optional TSQ floor, and whether the level ran at the concurrency it was asked for.

`slo_checks` decides a level's SLO pass/fail for one set of bounds, apart from the decision
check, so several sets of bounds (tiers) can be judged on the same measured values.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np
import pandas as pd

from analysis.decision_noise import DivergenceVerdict, ScenarioDivergence, judge_divergence
from analysis.metrics.throughput import failed_and_counted
from contracts.capacity import (
    CapacitySearch,
    CapacityStep,
    Check,
    DecisionFigures,
    Interval,
    Look,
    TierVerdict,
    Verdict,
    slo_column,
)

ACHIEVED_CHECK = "achieved_share"


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


def slo_checks(slos: dict[str, float], values: dict[str, float],
               floors: dict[str, float] | None = None) -> list[Check]:
    """One check per bound: passes when the measured value is known and at most the bound
    (`floors`: at least it)."""
    checks = []
    bounds = [(n, v, False) for n, v in slos.items()]
    bounds += [(n, v, True) for n, v in (floors or {}).items()]
    for name, limit, floor in bounds:
        value = values.get(name, math.nan)
        known = not math.isnan(value)
        held = known and (value >= limit if floor else value <= limit)
        checks.append(Check(name=name, value=value if known else None, limit=limit,
                            floor=floor, passed=held,
                            note="" if known else "nothing measured"))
    return checks


def tier_verdicts(search: CapacitySearch, slo_values: dict[str, float],
                  shared: Sequence[Check]) -> list[TierVerdict]:
    """Each tier's SLO checks and its verdict with the checks every tier shares (decisions,
    achieved concurrency, TSQ floor: judged once per look)."""
    out = []
    for tier in search.tier_list():
        checks = slo_checks(tier.slos, slo_values, tier.floors)
        out.append(TierVerdict(name=tier.name, checks=checks,
                               verdict=level_verdict([*checks, *shared])))
    return out


def _interval(values: tuple[float, float, float]) -> Interval:
    def clean(v: float) -> float | None:
        return None if math.isnan(v) else v

    return Interval(mean=clean(values[0]), low=clean(values[1]), high=clean(values[2]))


def _none(v: float) -> float | None:
    return None if math.isnan(v) else v


def decision_figures(search: CapacitySearch, verdict: DivergenceVerdict, reference: str
                     ) -> DecisionFigures:
    return DecisionFigures(
        metric=search.agreement_metric, reference=reference, scenarios=verdict.n,
        own=_interval(verdict.own), reference_own=_interval(verdict.reference_own),
        across=_interval(verdict.across), divergence=_interval(verdict.divergence),
        drop=_interval(verdict.drop), upper=_none(verdict.upper), lower=_none(verdict.lower),
        confidence=verdict.confidence)


def decision_check(search: CapacitySearch, scenarios: Sequence[ScenarioDivergence],
                   is_reference: bool, confidence: float, stop_confidence: float
                   ) -> tuple[Check, DivergenceVerdict]:
    """The decision check at one look. The reference level passes when it has something to
    compare (a tool call, ≥ 2 repeats of a scenario)."""
    verdict = judge_divergence(scenarios, search.max_divergence, confidence, stop_confidence)
    name = f"{search.agreement_metric}_divergence"
    if is_reference:
        usable = verdict.outcome != "undecidable" and any(
            not math.isnan(s.reference_own) for s in scenarios)
        return Check(name=name, value=None, limit=search.max_divergence, passed=usable,
                     note=verdict.note or "reference level"), verdict
    return Check(name=name, value=_none(verdict.divergence[0]), bound=_none(verdict.upper),
                 limit=search.max_divergence, passed=verdict.outcome == "intact",
                 confident=verdict.outcome in ("degraded", "undecidable"),
                 note=verdict.note), verdict


def achieved_check(share: float | None, minimum: float | None, why: str | None) -> Check:
    """The level kept its configured agents busy: achieved / configured concurrency over the
    measured window at least `minimum` (`why`: the runner's reason it cannot be certified)."""
    known = share is not None and not math.isnan(share)
    return Check(name=ACHIEVED_CHECK, value=share if known else None,
                 limit=minimum if minimum is not None else 0.0,
                 passed=why is None and known, note=why or ("" if known else "not measured"))


def within_noise(check: Check) -> bool:
    """The decision check neither passed nor shown degraded: more repeats may decide it."""
    return check.name.endswith("_divergence") and not check.passed and not check.confident


def level_verdict(checks: list[Check]) -> Verdict:
    """fail when any check fails beyond noise; inconclusive when what failed is only the
    decision check within noise or the level's achieved concurrency (it did not hold its
    load: not certified, but nothing about the server shown either); else pass."""
    failed = [c for c in checks if not c.passed]
    if not failed:
        return "pass"
    if all(within_noise(c) or c.name == ACHIEVED_CHECK for c in failed):
        return "inconclusive"
    return "fail"


def judge(search: CapacitySearch, slo_values: dict[str, float],
          scenarios: Sequence[ScenarioDivergence], is_reference: bool,
          confidence: tuple[float, float], tsq: float | None = None, reference: str = "",
          extra: Sequence[Check] = ()) -> tuple[list[Check], DecisionFigures, Verdict,
                                                DivergenceVerdict]:
    """Every check of one level at one look, its figures and its verdict. `confidence`: of
    the bound that passes a level and of the one that shows it degraded; `extra`: checks
    judged elsewhere (the achieved concurrency). The checks and verdict are the first tier's
    (judge_tiers gives every tier's)."""
    checks, figures, tiers, judged = judge_tiers(search, slo_values, scenarios, is_reference,
                                                 confidence, tsq, reference, extra)
    return checks, figures, tiers[0].verdict, judged


def judge_tiers(search: CapacitySearch, slo_values: dict[str, float],
                scenarios: Sequence[ScenarioDivergence], is_reference: bool,
                confidence: tuple[float, float], tsq: float | None = None,
                reference: str = "", extra: Sequence[Check] = ()
                ) -> tuple[list[Check], DecisionFigures, list[TierVerdict], DivergenceVerdict]:
    """judge, with every tier's verdict: the shared checks (the decision check among them)
    are judged once and given to each tier."""
    shared, judged = shared_checks(search, scenarios, is_reference, confidence, tsq, extra)
    tiers = tier_verdicts(search, slo_values, shared)
    return ([*tiers[0].checks, *shared], decision_figures(search, judged, reference), tiers,
            judged)


def shared_checks(search: CapacitySearch, scenarios: Sequence[ScenarioDivergence],
                  is_reference: bool, confidence: tuple[float, float],
                  tsq: float | None = None, extra: Sequence[Check] = ()
                  ) -> tuple[list[Check], DivergenceVerdict]:
    """The checks every tier shares at one look: the TSQ floor, `extra`, the decision check."""
    checks = []
    if search.min_tsq is not None:
        known = tsq is not None and not math.isnan(tsq)
        checks.append(Check(name="min_tsq", value=tsq if known else None,
                            limit=search.min_tsq, passed=known and tsq >= search.min_tsq,
                            note="" if known else "no TSQ (labels?)"))
    checks += list(extra)
    decision, verdict = decision_check(search, scenarios, is_reference, *confidence)
    checks.append(decision)
    return checks, verdict


def level_step(search: CapacitySearch, level: int, phase: str,
               confidence: tuple[float, float], *,
               slo_values: dict[str, float], scenarios: Sequence[ScenarioDivergence],
               is_reference: bool, reference: str, repeats: int, reference_repeats: int,
               tsq: float | None = None, extra: Sequence[Check] = (), reused: bool = False,
               seconds: float = 0.0, achieved: float | None = None) -> CapacityStep:
    """One look at one level as a step of the search (the product's and the simulation's)."""
    checks, figures, tiers, judged = judge_tiers(search, slo_values, scenarios, is_reference,
                                                 confidence, tsq, reference, extra)
    verdict = tiers[0].verdict
    look = Look(repeats=repeats, reference_repeats=reference_repeats, scenarios=judged.n,
                divergence=_none(judged.divergence[0]), upper=_none(judged.upper),
                lower=_none(judged.lower), confidence=confidence[0],
                outcome="intact" if is_reference and verdict == "pass" else judged.outcome)
    return CapacityStep(level=level, phase=phase, verdict=verdict, passed=verdict == "pass",
                        reused=reused, checks=checks, tiers=tiers, decisions=figures,
                        looks=[look],
                        repeats=repeats, achieved_concurrency=achieved, seconds=seconds,
                        at=datetime.now(UTC))
