"""How an agent's decisions vary between runs and across load: the family of models the
capacity search's decision check is judged on (benchmarks/capacity_noise.py; the range that
`bankbench capacity --plan` prints).

A model says, per scenario and concurrency level, what trajectory a run ends with (the set of
tool names the agent called; `()` = it called none, a decline) as a probability distribution,
and what the harness adds on top: repeats that copy each other when they run side by side,
trials lost to the server or the harness, a latency cliff. Degradations (a share of scenarios
switching to a wrong trajectory from a known level) are put on top by the simulation, the same
way for every model; a scenario says where it goes when degraded (`Scenario.wrong`).

Nothing here judges anything: the simulation draws runs from these distributions and hands
them to the code the search runs.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field

Trajectory = tuple[str, ...]  # sorted distinct tool names; () = no tool called
Distribution = tuple[tuple[Trajectory, float], ...]  # probabilities sum to 1

TOOLS: tuple[str, ...] = tuple(f"tool_{i:02d}" for i in range(20))
NEAR_TIE_CAP = 0.5  # a near-tie is at most a coin flip: above it the alternative is the centre


def trajectory(tools: object) -> Trajectory:
    return tuple(sorted(set(tools)))  # type: ignore[call-overload]


def mix(parts: list[tuple[Distribution, float]]) -> Distribution:
    """The mixture of distributions with the given weights (zero weights dropped)."""
    out: dict[Trajectory, float] = {}
    for dist, weight in parts:
        for traj, p in dist:
            if weight * p > 0:
                out[traj] = out.get(traj, 0.0) + weight * p
    return tuple(out.items())


def point(traj: Trajectory) -> Distribution:
    return ((traj, 1.0),)


def wrong_trajectory(rng: random.Random, centre: Trajectory, avoid: set[str]) -> Trajectory:
    """A trajectory a degraded run ends with: about half the centre's tools replaced by tools
    no run of the scenario called (one in seven: a decline instead); a decline becomes one or
    two calls."""
    free = [t for t in TOOLS if t not in avoid and t not in centre]
    if len(free) < 2:  # every tool is some run's (a model with swaps to any tool)
        free = [t for t in TOOLS if t not in centre]
    if not centre:
        return trajectory(rng.sample(free, rng.choice((1, 2))))
    if rng.random() < 1 / 7:
        return ()
    keep = rng.sample(centre, len(centre) - math.ceil(len(centre) / 2))
    return trajectory([*keep, *rng.sample(free, len(centre) - len(keep))])


@dataclass(frozen=True)
class Scenario:
    """One scenario: its usual trajectory, where a divergence goes, and how often it
    diverges at each level. Subclasses may override `at` and `wrong` freely."""

    centre: Trajectory
    alternatives: Distribution = ()
    rate: Callable[[int], float] = field(default=lambda level: 0.0)
    seed: int = 0  # for `wrong`, so a scenario always degrades to the same trajectory

    def at(self, level: int) -> Distribution:
        p = min(max(self.rate(level), 0.0), 1.0) if self.alternatives else 0.0
        return mix([(point(self.centre), 1 - p), (self.alternatives, p)])

    def wrong(self) -> Distribution:
        avoid = {t for traj, _ in self.alternatives for t in traj}
        return point(wrong_trajectory(random.Random(self.seed), self.centre, avoid))


@dataclass(frozen=True)
class NoiseModel:
    name: str
    summary: str
    scenarios: Callable[[random.Random, int], list[Scenario]]
    co_run_copy: float = 0.0  # P(a repeat repeats the decision of a repeat it ran beside)
    lost_server: float = 0.0  # share of trials lost to the server (infra_failed)
    lost_harness: float = 0.0  # share lost to the harness (harness_failed)
    cliff_level: int | None = None  # a latency cliff from this level up; decisions intact


# --- the pieces models are made of ------------------------------------------------------------

def centre_for(rng: random.Random, tools: tuple[int, int], decline_share: float) -> Trajectory:
    if rng.random() < decline_share:
        return ()
    return trajectory(rng.sample(TOOLS, rng.randint(*tools)))


def near_tie(rng: random.Random, centre: Trajectory) -> Trajectory:
    """The scenario's own near-tie alternative: one tool swapped (most often), one dropped or
    one added; a decline's alternative is one call."""
    others = [t for t in TOOLS if t not in centre]
    if not centre:
        return (rng.choice(others),)
    kind = rng.random()
    if kind < 0.7:
        return trajectory([*rng.sample(centre, len(centre) - 1), rng.choice(others)])
    if kind < 0.85 and len(centre) > 1:
        return trajectory(rng.sample(centre, len(centre) - 1))
    return trajectory([*centre, rng.choice(others)])


def doublings(level: int) -> float:
    return math.log2(max(level, 1))


def heterogeneous(*, tools: tuple[int, int] = (1, 4), decline_share: float = 0.1,
                  flaky_share: float = 0.3, rates: tuple[float, float] = (0.1, 0.5),
                  growth: float = 0.0, newly_flaky: float = 0.0,
                  batch_of_one: float = 1.0) -> Callable[[random.Random, int], list[Scenario]]:
    """Most scenarios never diverge; a `flaky_share` diverge at their own rate (uniform in
    `rates`) toward their own near-tie alternative. `growth`: a flaky rate is multiplied by
    1 + growth per doubling of the level (capped at a coin flip); `newly_flaky`: the share of
    stable scenarios that diverge at a level grows by this per doubling (at rate 0.05–0.25);
    `batch_of_one`: the rate at concurrency 1 (a batch of one) is multiplied by this."""

    def make(rng: random.Random, n: int) -> list[Scenario]:
        out = []
        for _ in range(n):
            centre = centre_for(rng, tools, decline_share)
            alternative = point(near_tie(rng, centre))
            if rng.random() < flaky_share:
                base = rng.uniform(*rates)
                onset = 0.0
            else:
                base = rng.uniform(0.05, 0.25)
                onset = rng.random() / newly_flaky if newly_flaky > 0 else math.inf

            def rate(level: int, base: float = base, onset: float = onset) -> float:
                if doublings(level) < onset:
                    return 0.0
                p = min(NEAR_TIE_CAP, base * (1 + growth * doublings(level)))
                return p * batch_of_one if level == 1 else p

            out.append(Scenario(centre, alternative, rate, seed=rng.getrandbits(32)))
        return out

    return make


def legacy(floor: float = 0.95, kappa: float = 2.0
           ) -> Callable[[random.Random, int], list[Scenario]]:
    """The simplest model: every scenario two tools of twenty; each run diverges with the
    scenario's own probability (Beta around the rate that gives the floor) by one tool swapped
    for any other; the same at every level."""
    p = _legacy_rate(floor, kappa)

    def make(rng: random.Random, n: int) -> list[Scenario]:
        out = []
        for _ in range(n):
            centre = trajectory(rng.sample(TOOLS, 2))
            swaps = [trajectory([keep, other]) for keep in centre
                     for other in TOOLS if other not in centre]
            alternatives = tuple((s, 1 / len(swaps)) for s in swaps)
            p_s = rng.betavariate(kappa * p, kappa * (1 - p)) if 0 < p < 1 else p
            out.append(Scenario(centre, alternatives, lambda level, p_s=p_s: p_s,
                                seed=rng.getrandbits(32)))
        return out

    return make


def _legacy_rate(floor: float, kappa: float) -> float:
    """The mean divergence rate whose expected agreement between two runs is `floor`:
    E[F1] = E[(1-p)^2] + E[2p(1-p)]/2 + E[p^2]·b, b the F1 of two random swaps."""
    both = 0.5 * (1 / 18 + 17 / 18 * 0.5)

    def agreement(p: float) -> float:
        second = p * (1 - p) / (kappa + 1) + p * p  # E[p_s^2] for Beta(kp, k(1-p))
        return 1 - 2 * p + second + (p - second) + second * both

    low, high = 0.0, 1.0
    for _ in range(50):
        mid = (low + high) / 2
        low, high = (mid, high) if agreement(mid) > floor else (low, mid)
    return (low + high) / 2


# --- the family -------------------------------------------------------------------------------

_GROWING = {"growth": 0.15, "newly_flaky": 0.04}

FAMILY: tuple[NoiseModel, ...] = (
    NoiseModel("a-legacy", "two tools per scenario, Beta-distributed rates at floor 0.95, "
               "swaps to any tool, the same at every level", legacy()),
    NoiseModel("b-heterogeneous", "70% of scenarios never diverge, 30% at their own rate "
               "(0.1-0.5) toward their own near-tie; 1-4 tools; 10% declines",
               heterogeneous()),
    NoiseModel("c-growing", "(b), rates x(1 + 0.15 per doubling of the level), stable "
               "scenarios turning flaky as the batch grows", heterogeneous(**_GROWING)),
    NoiseModel("d-batch-of-one", "(b), concurrency 1 nearly deterministic (rates x0.05)",
               heterogeneous(batch_of_one=0.05)),
    NoiseModel("e-co-running", "(b), a repeat that runs beside another of its scenario "
               "repeats its decision 80% of the time", heterogeneous(), co_run_copy=0.8),
    NoiseModel("f-lost", "(b), 2% of trials lost, half to the server, half to the harness",
               heterogeneous(), lost_server=0.01, lost_harness=0.01),
    NoiseModel("g-latency-cliff", "(b), latency bound broken from level 24 up, decisions "
               "intact", heterogeneous(), cliff_level=24),
    NoiseModel("h-realistic", "(c), (e) and (f) at once", heterogeneous(**_GROWING),
               co_run_copy=0.8, lost_server=0.01, lost_harness=0.01),
)


def by_name(name: str, models: tuple[NoiseModel, ...] = FAMILY) -> NoiseModel:
    for model in models:
        if model.name == name or model.name.split("-")[0] == name:
            return model
    raise ValueError(f"no noise model {name!r}; known: {', '.join(m.name for m in models)}")
