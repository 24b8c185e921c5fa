"""Held-out noise models for the capacity search's decision check: written before the check
was designed, never used to choose or tune it, evaluated once at the end and reported apart
from the family in bankbench/capacity/noise_models.py (`benchmarks/capacity_noise.py
--held-out`).

Each is a way real deployments could differ from the family: noise that drifts from level to
level, adversarial near-ties (and degradation toward them), several alternatives per scenario,
one tool per trajectory, many declines, level-wide noise shocks that hit the reference too,
heavier harness effects, partial degradation, fast-growing noise.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from bankbench.capacity.noise_models import (
    NEAR_TIE_CAP,
    TOOLS,
    Distribution,
    NoiseModel,
    Scenario,
    centre_for,
    doublings,
    heterogeneous,
    mix,
    near_tie,
    point,
)


@dataclass(frozen=True)
class DriftingScenario(Scenario):
    """Its near-tie alternative changes at every doubling of the level, and its rate walks."""

    walk: tuple[float, ...] = ()
    by_doubling: tuple[Distribution, ...] = ()

    def at(self, level: int) -> Distribution:
        k = min(int(doublings(level)), len(self.by_doubling) - 1)
        p = min(NEAR_TIE_CAP, self.walk[k])
        return mix([(point(self.centre), 1 - p), (self.by_doubling[k], p)])


def drifting(rng: random.Random, n: int) -> list[Scenario]:
    out: list[Scenario] = []
    for _ in range(n):
        centre = centre_for(rng, (1, 4), 0.1)
        flaky = rng.random() < 0.3
        rate = rng.uniform(0.1, 0.5) if flaky else 0.0
        walk, alts = [], []
        for _ in range(12):
            walk.append(rate)
            alts.append(point(near_tie(rng, centre)))
            rate = min(NEAR_TIE_CAP, rate * rng.uniform(0.6, 1.5))
        out.append(DriftingScenario(centre, alts[0], seed=rng.getrandbits(32),
                                    walk=tuple(walk), by_doubling=tuple(alts)))
    return out


@dataclass(frozen=True)
class TowardNearTie(Scenario):
    """Degrades to its own near-tie alternative (a trajectory the reference already shows)."""

    def wrong(self) -> Distribution:
        return self.alternatives if self.alternatives else super().wrong()


def adversarial_near_ties(rng: random.Random, n: int) -> list[Scenario]:
    out: list[Scenario] = []
    for _ in range(n):
        centre = (rng.choice(TOOLS),)
        other = (rng.choice([t for t in TOOLS if t not in centre]),)
        p = rng.uniform(0.3, 0.5) if rng.random() < 0.4 else 0.0
        out.append(TowardNearTie(centre, point(other), lambda level, p=p: p,
                                 seed=rng.getrandbits(32)))
    return out


def several_alternatives(rng: random.Random, n: int) -> list[Scenario]:
    out: list[Scenario] = []
    for _ in range(n):
        centre = centre_for(rng, (1, 4), 0.1)
        p = rng.uniform(0.05, 0.5) if rng.random() < 0.35 else 0.0
        alts = {near_tie(rng, centre) for _ in range(rng.randint(2, 4))}
        weights = [rng.expovariate(1.0) for _ in alts]
        total = sum(weights)
        dist = tuple((a, w / total) for a, w in zip(sorted(alts), weights, strict=True))
        out.append(Scenario(centre, dist, lambda level, p=p: p, seed=rng.getrandbits(32)))
    return out


def level_shocks(rng: random.Random, n: int) -> list[Scenario]:
    """Every level draws one multiplier (log-normal, sd 0.6) on every scenario's rate: noise
    that moves all scenarios together, the reference's included."""
    shocks = {k: math.exp(rng.gauss(0, 0.6)) for k in range(13)}
    base = heterogeneous()(rng, n)
    return [Scenario(s.centre, s.alternatives,
                     lambda level, r=s.rate: min(NEAR_TIE_CAP,
                                                 r(level) * shocks[int(doublings(level))]),
                     seed=s.seed) for s in base]


@dataclass(frozen=True)
class PartlyWrong(Scenario):
    """Degraded, it goes wrong in 60% of runs and behaves as before in the rest."""

    def wrong(self) -> Distribution:
        return mix([(super().wrong(), 0.6), (self.at(2), 0.4)])


def partly_wrong(rng: random.Random, n: int) -> list[Scenario]:
    return [PartlyWrong(s.centre, s.alternatives, s.rate, s.seed)
            for s in heterogeneous()(rng, n)]


HELD_OUT: tuple[NoiseModel, ...] = (
    NoiseModel("H1-drifting", "flaky scenarios' near-tie alternative changes at every "
               "doubling of the level; rates walk x0.6-1.5 per doubling", drifting),
    NoiseModel("H2-adversarial-near-ties", "one tool per scenario, 40% coin-flip-like "
               "(0.3-0.5) toward a disjoint tool; degradation goes to that near-tie",
               adversarial_near_ties),
    NoiseModel("H3-several-alternatives", "35% flaky (0.05-0.5) over 2-4 alternatives of "
               "their own with random weights", several_alternatives),
    NoiseModel("H4-one-tool", "every trajectory one tool (F1 is 0 or 1)",
               heterogeneous(tools=(1, 1))),
    NoiseModel("H5-many-declines", "half the scenarios decline, 35% flaky",
               heterogeneous(decline_share=0.5, flaky_share=0.35)),
    NoiseModel("H6-level-shocks", "(b) with one log-normal rate multiplier per level, the "
               "reference's included", level_shocks),
    NoiseModel("H7-heavy-harness", "(c), every co-running repeat copies, 3% lost",
               heterogeneous(growth=0.15, newly_flaky=0.04), co_run_copy=1.0,
               lost_server=0.015, lost_harness=0.015),
    NoiseModel("H8-partly-wrong", "(b); a degraded scenario goes wrong in 60% of its runs",
               partly_wrong),
    NoiseModel("H9-fast-growing", "(b), rates x(1 + 0.4 per doubling), 8% of stable "
               "scenarios turning flaky per doubling",
               heterogeneous(growth=0.4, newly_flaky=0.08)),
)
