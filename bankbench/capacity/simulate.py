"""Runs drawn from a noise model (bankbench/capacity/noise_models.py) the way a level runs
them: trials queued repeat-major into `level` slots (Harbor's order), each with its own
duration, so a scenario's repeats run side by side exactly when the queue puts them so; a
repeat beside another of its scenario may repeat that one's decision; some trials are lost.

Also the exact divergence between two decision distributions (the quantity the decision check
estimates), and the choice of which scenarios a degradation switches so that its true size is
what was asked. Used by benchmarks/capacity_noise.py and `bankbench capacity --plan`.
"""

from __future__ import annotations

import heapq
import math
import random
from dataclasses import dataclass

from bankbench.capacity.noise_models import Distribution, NoiseModel, Scenario, Trajectory


def agreement(a: Trajectory, b: Trajectory) -> float:
    """Tool-name F1, two declines agreeing (analysis.decision_noise.decision_agreement on
    trajectories)."""
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    shared = len(set(a) & set(b))
    return 2 * shared / (len(a) + len(b))


def expected_agreement(p: Distribution, q: Distribution) -> float:
    return sum(wa * wb * agreement(a, b) for a, wa in p for b, wb in q)


def true_divergence(level: Distribution, reference: Distribution) -> float:
    """Half the squared distance between the two distributions' mean embeddings under the
    agreement kernel: (A(L,L) + A(R,R))/2 - A(L,R), A the expected agreement of independent
    runs."""
    return ((expected_agreement(level, level) + expected_agreement(reference, reference)) / 2
            - expected_agreement(level, reference))


def draw(rng: random.Random, dist: Distribution) -> Trajectory:
    x = rng.random()
    for traj, p in dist:
        x -= p
        if x < 0:
            return traj
    return dist[-1][0]


@dataclass
class Trial:
    scenario: int
    repeat: int
    trajectory: Trajectory | None  # None: lost
    lost: str | None  # "server" | "harness" | None
    start: float
    end: float


def run_pass(rng: random.Random, model: NoiseModel, dists: list[Distribution], level: int,
             repeats: int, first_repeat: int = 0, durations: list[float] | None = None,
             t0: float = 0.0) -> list[Trial]:
    """One Harbor job of `repeats` repeats of every scenario at concurrency `level`.
    `durations`: each scenario's typical trial length (log-normal spread around it)."""
    n = len(dists)
    base = durations or [1.0] * n
    free = [t0] * max(level, 1)
    heapq.heapify(free)
    trials: list[Trial] = []
    by_scenario: dict[int, list[Trial]] = {}
    for j in range(repeats):
        for s in range(n):
            start = heapq.heappop(free)
            end = start + base[s] * math.exp(rng.gauss(0.0, 0.3))
            heapq.heappush(free, end)
            beside = [t for t in by_scenario.get(s, []) if t.end > start and t.trajectory]
            if beside and rng.random() < model.co_run_copy:
                traj: Trajectory | None = beside[0].trajectory
            else:
                traj = draw(rng, dists[s])
            lost = None
            x = rng.random()
            if x < model.lost_server:
                lost = "server"
            elif x < model.lost_server + model.lost_harness:
                lost = "harness"
            trial = Trial(s, first_repeat + j, None if lost else traj, lost, start, end)
            trials.append(trial)
            by_scenario.setdefault(s, []).append(trial)
    return trials


def degraded_set(rng: random.Random, scenarios: list[Scenario], drop: float,
                 reference_level: int) -> tuple[set[int], float]:
    """Scenarios to switch to their wrong trajectory so that the mean over all scenarios of
    their true divergence from the reference is as close to `drop` as whole scenarios allow;
    returns them and that true size."""
    if drop <= 0:
        return set(), 0.0
    order = list(range(len(scenarios)))
    rng.shuffle(order)
    chosen: set[int] = set()
    total, target = 0.0, drop * len(scenarios)
    for i in order:  # add a scenario whenever it brings the total closer to the target
        d = true_divergence(scenarios[i].wrong(), scenarios[i].at(reference_level))
        if d > 0 and abs(total + d - target) < abs(total - target):
            chosen.add(i)
            total += d
    return chosen, total / len(scenarios)


def steady_repeats(level: int, n_scenarios: int, repeats: int, multiple: int = 3) -> int:
    """Repeats per scenario of one pass: at least `repeats`, and enough trials that the level
    keeps its concurrency busy (`multiple` x level trials)."""
    return max(repeats, math.ceil(multiple * level / max(n_scenarios, 1)))


SIM_SLO = {"ttft_p90_ms": 300.0}  # the latency bound every simulated search carries


def latency_p90(rng: random.Random, model: NoiseModel, level: int) -> float:
    """A latency figure that grows slowly with the level (always under SIM_SLO), and breaks
    it four-fold from the model's cliff level up."""
    value = 100.0 * (1 + 0.02 * level) * (1 + 0.05 * rng.gauss(0.0, 1.0))
    return value * 4 if model.cliff_level is not None and level >= model.cliff_level else value
