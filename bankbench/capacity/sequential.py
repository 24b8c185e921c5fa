"""The search loop with sequential repeats: run the reference, then levels in the order
bankbench/capacity/search.py gives them; a level whose decisions are inconclusive is run
again with its repeats doubled (the reference's doubled with it) until it is shown intact or
degraded, or it has had `max_looks` looks.

**Error control.** Passing a level is the search's claim: every look at every level spends an
equal share of alpha on it, so a look passes a level when the divergence's upper bound at
confidence 1 - alpha / (K x J) is under the margin, K the most levels the search can judge and
J = `max_looks`, the most looks a level can take (its repeats doubled between looks). By
Bonferroni the chance that any level whose true divergence is at the margin or above passes, at
any of its looks, is at most alpha, whatever the looks' dependence and whatever order the
search visits levels in. Showing a level degraded stops the climb: its lower bound, at
confidence 1 - alpha / J, must reach the margin, so a level whose true divergence is under the
margin is shown degraded with probability at most alpha (and a level with none, practically
never). Only a level that fails (an SLO broken, decisions shown degraded) stops the climb; one
still inconclusive at the cap is reported and bounds the answer from above.

The loop runs on a `LevelSource`: the product's runs Harbor jobs and reads them back
(bankbench/capacity/run.py), the simulation's draws runs from a noise model
(bankbench/capacity/simulate.py) — the same loop, the same judging code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from bankbench.capacity.checks import within_noise
from bankbench.capacity.search import (
    boundary,
    bracket,
    cliffs,
    inconclusive_levels,
    levels_judgeable,
    limiting,
    limiting_level,
    next_level_tiers,
    tier_steps,
)
from contracts.capacity import (
    CapacityRecord,
    CapacitySearch,
    CapacityStep,
    Look,
    Tier,
    TierResult,
)


def look_confidence(alpha: float, k_levels: int, looks: int) -> tuple[float, float]:
    """(confidence of the bound that passes a level, of the one that shows it degraded)."""
    return (1.0 - alpha / (max(k_levels, 1) * max(looks, 1)),
            1.0 - alpha / max(looks, 1))


class LevelSource(Protocol):
    def ensure(self, level: int, repeats: int) -> None:
        """Make the level hold at least `repeats` finished repeats of every scenario."""

    def repeats(self, level: int) -> int:
        """Repeats per scenario the level holds (most scenarios)."""

    def judge(self, level: int, phase: str, confidence: tuple[float, float]) -> CapacityStep:
        """The level's step at one look (checks, decisions, verdict) from what it holds."""


def tier_result(steps: list[CapacityStep], tier: Tier, gpus: int | None) -> TierResult:
    """One tier's capacity, boundary and limiting checks from its view of the steps."""
    mine = tier_steps(steps, tier.name)
    capacity, failing = bracket(mine)
    at = next((s for s in mine if s.level == capacity), None)
    return TierResult(
        name=tier.name, slos=tier.slos, floors=tier.floors, capacity=capacity,
        lowest_failing=failing, boundary_high=boundary(mine, capacity),
        limiting=limiting(mine, limiting_level(mine, capacity)),
        inconclusive=inconclusive_levels(mine),
        achieved_concurrency=at.achieved_concurrency if at else None,
        per_accelerator=capacity / gpus if gpus and capacity is not None else None)


def refresh(record: CapacityRecord) -> None:
    """The record's summary fields from its steps: every tier's, and the first tier's as the
    record's own fields (what readers from before tiers read)."""
    steps = record.steps
    record.tiers = [tier_result(steps, t, record.search.gpus)
                    for t in record.search.tier_list()]
    first = record.tiers[0]
    record.capacity, record.lowest_failing = first.capacity, first.lowest_failing
    record.inconclusive = first.inconclusive
    record.boundary_high = first.boundary_high
    record.limiting = first.limiting
    record.achieved_concurrency = first.achieved_concurrency
    record.cliffs = cliffs(steps, record.search.max_divergence)


def search_loop(search: CapacitySearch, ceiling: int, source: LevelSource,
                record: CapacityRecord, *, reference_level: int | None,
                may_start: Callable[[int], bool] = lambda level: True,
                on_step: Callable[[CapacityStep], None] = lambda step: None,
                on_look: Callable[[int, str], None] = lambda level, message: None
                ) -> CapacityRecord:
    """Search until the frontier is bracketed (or a cap); `reference_level`: the level of
    this search every level is compared with (None: the reference is another run's).
    `may_start(level)`: False stops the search before a new level (time cap)."""
    k_levels = levels_judgeable(search, ceiling)
    confidence = look_confidence(search.alpha, k_levels, search.max_looks)
    if reference_level is not None:
        source.ensure(reference_level, search.repeats)
    while True:
        level, phase = next_level_tiers(record.steps, search, ceiling)
        if level is None:
            record.stopped_because = phase
            break
        if not may_start(level):
            record.stopped_because = "max_minutes"
            break
        source.ensure(level, search.repeats)
        looks: list[Look] = []
        for look in range(search.max_looks):
            if look:
                have = source.repeats(level)
                on_look(level, f"decisions within noise at {have} repeats: running it to "
                        f"{2 * have}")
                source.ensure(level, 2 * have)
                if reference_level is not None:
                    source.ensure(reference_level, search.repeats * 2 ** look)
            step = source.judge(level, phase, confidence)
            looks.extend(step.looks)
            verdicts = [t.verdict for t in step.tiers] or [step.verdict]
            if "inconclusive" not in verdicts or not any(within_noise(c) for c in step.checks):
                break  # decided, or undecided for a reason more repeats do not change
        step.looks = looks
        record.steps.append(step)
        refresh(record)
        on_step(step)
    return record
