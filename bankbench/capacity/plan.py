"""What a capacity search's design can claim, before (`bankbench capacity --plan`) and after
a search: the power to pass a level whose decisions did not change, and the smallest drop it
catches, at a given noise floor.

Both come from simulating levels through the judging code the search runs
(analysis.decision_noise via search.judge_decisions), on synthetic decisions from a stated
noise model:

- every scenario has a right set of two tools out of twenty;
- each run diverges with a scenario's own probability p_s (one of its two tools swapped for
  another): p_s ~ Beta(KAPPA·p, KAPPA·(1-p)), so most scenarios are stable and a few flip
  often, as GPU non-determinism behaves (a trajectory flips where two tools score close);
- p is set so the expected agreement between two runs equals the floor;
- a degraded level adds divergence q on top, q set so the expected agreement with the
  reference falls by the drop.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from analysis.consistency import tool_f1
from analysis.decision_noise import (
    Calls,
    full_agreement_bound,
    per_level_confidence,
    scenario_agreements,
)
from bankbench.capacity.search import judge_decisions, next_level
from contracts.capacity import CapacitySearch, Design

TOOLS = tuple(f"tool_{i:02d}" for i in range(20))
KAPPA = 2.0
# E[F1] of two diverged runs: same slot swapped (1/2) to the same tool (1/18) -> 1, to
# another -> 1/2; different slots swapped -> 0.
_BOTH_DIVERGED = 0.5 * (1 / 18 + 17 / 18 * 0.5)


def _agreement(p1: np.ndarray, p2: np.ndarray) -> float:
    """Expected F1 between a run diverging with p1 and one diverging with p2."""
    return float(np.mean((1 - p1) * (1 - p2) + 0.5 * (p1 * (1 - p2) + p2 * (1 - p1))
                         + p1 * p2 * _BOTH_DIVERGED))


def _scenario_p(p: float, n: int = 20_000) -> np.ndarray:
    if p <= 0:
        return np.zeros(n)
    return np.random.default_rng(0).beta(KAPPA * p, KAPPA * (1 - p), n)


def _solve(f, target: float) -> float:
    """x in [0, 1] with f(x) == target, f decreasing (bisection)."""
    low, high = 0.0, 1.0
    for _ in range(40):
        mid = (low + high) / 2
        low, high = (mid, high) if f(mid) > target else (low, mid)
    return (low + high) / 2


@dataclass(frozen=True)
class NoiseModel:
    """Divergence probability p for a floor; extra divergence q for a drop."""

    floor: float

    @property
    def divergence(self) -> float:
        return 0.0 if self.floor >= 1 else _solve(
            lambda p: _agreement(_scenario_p(p), _scenario_p(p)), self.floor)

    def extra_for_drop(self, drop: float) -> float:
        if drop <= 0:
            return 0.0
        ps = _scenario_p(self.divergence)
        base = _agreement(ps, ps)
        return _solve(lambda q: _agreement(ps + (1 - ps) * q, ps) - base + 1, 1 - drop)


def draw_scenarios(rng: random.Random, n: int, divergence: float
                   ) -> list[tuple[tuple[str, str], float]]:
    """(right tools, divergence p_s) per scenario."""
    out = []
    for _ in range(n):
        p_s = rng.betavariate(KAPPA * divergence, KAPPA * (1 - divergence)) \
            if 0 < divergence < 1 else divergence
        out.append((tuple(rng.sample(TOOLS, 2)), p_s))
    return out


def draw_level(rng: random.Random, scenarios: list[tuple[tuple[str, str], float]],
               repeats: int, extra: float = 0.0) -> dict[str, list[Calls]]:
    """Each scenario's repeats' calls at a level with extra divergence `extra`."""
    level: dict[str, list[Calls]] = {}
    for i, (tools, p_s) in enumerate(scenarios):
        p = p_s + (1 - p_s) * extra
        runs = []
        for _ in range(repeats):
            chosen = list(tools)
            if rng.random() < p:
                slot = rng.randrange(2)
                chosen[slot] = rng.choice([t for t in TOOLS if t not in tools])
            runs.append([(t, {}) for t in chosen])
        level[f"s{i:03d}"] = runs
    return level


def pass_rate(search: CapacitySearch, n_scenarios: int, floor: float, drop: float,
              confidence: float, sims: int = 300, seed: int = 1) -> float:
    """Share of simulated levels (drop below the reference) whose decision check passes."""
    model = NoiseModel(floor)
    p, q = model.divergence, model.extra_for_drop(drop)
    rng = random.Random(seed)
    passed = 0
    for _ in range(sims):
        scenarios = draw_scenarios(rng, n_scenarios, p)
        ref = draw_level(rng, scenarios, search.repeats)
        level = draw_level(rng, scenarios, search.repeats, q)
        check, _ = judge_decisions(search, scenario_agreements(level, ref, tool_f1), False,
                                   confidence)
        passed += check.passed
    return passed / sims


def design(search: CapacitySearch, n_scenarios: int, k_levels: int, floor: float | None,
           sims: int = 300) -> Design:
    """The design's figures; power and detectable drop only when a floor is known."""
    confidence = per_level_confidence(search.alpha, k_levels)
    best = full_agreement_bound(n_scenarios, confidence)
    power = detectable = search_power = None
    if floor is not None and not math.isnan(floor) and n_scenarios > 1:
        power = pass_rate(search, n_scenarios, floor, 0.0, confidence, sims)
        low, high = 0.0, 1.0 - (1.0 - floor)  # a drop cannot exceed the floor
        for _ in range(7):  # bisect for the drop failed 80 % of the time
            mid = (low + high) / 2
            if 1 - pass_rate(search, n_scenarios, floor, mid, confidence, sims) >= 0.8:
                high = mid
            else:
                low = mid
        detectable = high
        search_power = power ** max(levels_to_top(search, n_scenarios * search.repeats) - 1, 0)
    return Design(scenarios=n_scenarios, repeats=search.repeats, levels_judgeable=k_levels,
                  confidence=confidence, floor=floor, best_bound=best, power=power,
                  search_power=search_power, detectable_drop=detectable)


def levels_to_top(search: CapacitySearch, ceiling: int) -> int:
    """Levels a search runs when every level passes."""
    steps: list = []
    while (level := next_level(steps, search, ceiling)[0]) is not None:
        steps.append(SimpleNamespace(level=level, passed=True))
    return len(steps)


def verdict(design: Design, max_drop: float) -> str | None:
    """What the headline must say when the design cannot support its claim (None: it can)."""
    if design.best_bound >= max_drop:
        return (f"not enough scenarios to certify a decision drop under {max_drop:g}: "
                f"{design.scenarios} scenarios bound it at {design.best_bound:.2f} even when "
                "all agree")
    if design.search_power is not None and design.search_power < 0.8:
        return (f"underpowered: with no real change anywhere, a search passes every level "
                f"only {design.search_power:.0%} of the time at floor {design.floor:.2f} "
                f"({design.scenarios} scenarios x {design.repeats} repeats; a level "
                f"{design.power:.0%})")
    return None


def summary_lines(design: Design, max_drop: float, alpha: float) -> list[str]:
    lines = [f"design: {design.scenarios} scenarios x {design.repeats} repeats per level, "
             f"up to {design.levels_judgeable} levels judged, each at confidence "
             f"{design.confidence:.4f} (Bonferroni, alpha {alpha:g})",
             f"best bound (every scenario agrees): drop < {design.best_bound:.3f} "
             f"(margin --max-drop {max_drop:g})"]
    if design.power is not None:
        lines.append(f"at floor {design.floor:.3f}: a level with no real change passes "
                     f"{design.power:.1%} of the time, a whole search with no change "
                     f"about {design.search_power:.1%}")
        lines.append(f"smallest drop failed ≥ 80% of the time: {design.detectable_drop:.3f}"
                     if design.power >= 0.2 else
                     "smallest drop failed: none, a level fails even with no change")
    return lines
