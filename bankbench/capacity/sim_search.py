"""A whole capacity search on simulated runs: the product's search loop
(bankbench/capacity/sequential.py · search_loop) and judging code (checks.level_step,
analysis/decision_noise.py) on a `LevelSource` whose runs are drawn from a noise model
(bankbench/capacity/simulate.py), with an optional degradation from a known level.

What it measures, per model and design: the share of searches with nothing degraded that stop
below the top (false stops), and the share of searches with a degradation whose capacity lands
within one doubling below the level it starts at (detection; for a latency cliff, the cliff
found).
"""

from __future__ import annotations

import functools
import math
import random
from dataclasses import dataclass, field

from analysis.consistency import tool_f1
from analysis.decision_noise import Calls, as_reference, declines_agree, scenario_divergences
from bankbench.capacity.checks import level_step
from bankbench.capacity.noise_models import NoiseModel, Scenario
from bankbench.capacity.sequential import search_loop
from bankbench.capacity.simulate import (
    SIM_SLO,
    Trial,
    degraded_set,
    latency_p90,
    run_pass,
    steady_repeats,
)
from contracts.capacity import CapacityRecord, CapacitySearch, CapacityStep

CEILING = 10**6  # no task-count cap in the simulation


AGREEMENT = declines_agree(tool_f1)  # what the product judges with (--agreement-metric)


@functools.lru_cache(maxsize=4096)
def _as_calls(trajectory: tuple[str, ...]) -> Calls:
    return [(tool, {}) for tool in trajectory]


@dataclass
class SimulatedSource:
    """Levels drawn from a model: passes queue repeat-major at the level's concurrency, one
    after another; a degradation switches `degraded` scenarios from `from_level` up."""

    search: CapacitySearch
    model: NoiseModel
    scenarios: list[Scenario]
    rng: random.Random
    degraded: set[int] = field(default_factory=set)
    from_level: int = 0
    reference_level: int = 2
    steady_multiple: int = 3
    trials: dict[int, list[Trial]] = field(default_factory=dict)
    durations: list[float] = field(default_factory=list)
    latency: dict[int, float] = field(default_factory=dict)  # the level's p90, as measured
    _cache: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.durations:
            self.durations = [self.rng.uniform(0.5, 2.0) for _ in self.scenarios]

    def _dists(self, level: int) -> list:
        key = ("dists", level)
        if key not in self._cache:
            self._cache[key] = [s.wrong() if i in self.degraded and level >= self.from_level
                                else s.at(level) for i, s in enumerate(self.scenarios)]
        return self._cache[key]

    def repeats(self, level: int) -> int:
        have = self.trials.get(level, [])
        return len(have) // len(self.scenarios) if have else 0

    def ensure(self, level: int, repeats: int) -> None:
        have = self.repeats(level)
        if have >= repeats:
            return
        n = steady_repeats(level, len(self.scenarios), repeats - have, self.steady_multiple)
        done = self.trials.setdefault(level, [])
        t0 = max((t.end for t in done), default=0.0)  # passes run one after another
        done += run_pass(self.rng, self.model, self._dists(level), level, n, have,
                         self.durations, t0)
        self.latency.setdefault(level, latency_p90(self.rng, self.model, level))

    def _calls(self, level: int) -> tuple[dict[str, list[Calls]], dict[str, set]]:
        key = (level, len(self.trials.get(level, [])))
        if key not in self._cache:
            self._cache[key] = self._read(level)
        return self._cache[key]

    def _read(self, level: int) -> tuple[dict[str, list[Calls]], dict[str, set]]:
        kept: dict[str, list[Trial]] = {}
        for t in self.trials.get(level, []):
            if t.trajectory is not None:
                kept.setdefault(f"s{t.scenario:03d}", []).append(t)
        calls: dict[str, list[Calls]] = {}
        overlaps: dict[str, set[tuple[int, int]]] = {}
        for sid, ts in kept.items():
            calls[sid] = [_as_calls(t.trajectory or ()) for t in ts]
            order = sorted(range(len(ts)), key=lambda i: ts[i].start)
            met = set()
            for x, i in enumerate(order):
                for j in order[x + 1:]:
                    if ts[j].start >= ts[i].end:
                        break
                    met.add((min(i, j), max(i, j)))
            overlaps[sid] = met
        return calls, overlaps

    def _reference_own(self) -> dict[str, float]:
        key = ("own", len(self.trials.get(self.reference_level, [])))
        if key not in self._cache:
            calls, overlaps = self._calls(self.reference_level)
            self._cache[key] = {s.scenario_id: s.reference_own for s in scenario_divergences(
                {sid: [] for sid in calls}, calls, AGREEMENT, reference_overlaps=overlaps)}
        return self._cache[key]

    def judge(self, level: int, phase: str, confidence: tuple[float, float]) -> CapacityStep:
        calls, overlaps = self._calls(level)
        ref_calls, ref_overlaps = self._calls(self.reference_level)
        scenarios = scenario_divergences(calls, ref_calls, AGREEMENT, level_overlaps=overlaps,
                                         reference_overlaps=ref_overlaps,
                                         reference_own=self._reference_own())
        if level == self.reference_level:
            scenarios = as_reference(scenarios)
        trials = self.trials[level]
        lost = sum(t.lost == "server" for t in trials) / len(trials)
        values = {"ttft_p90_ms": self.latency[level], "lost_rate": lost}
        return level_step(self.search, level, phase, confidence, slo_values=values,
                          scenarios=scenarios, is_reference=level == self.reference_level,
                          reference=f"c{self.reference_level}", repeats=self.repeats(level),
                          reference_repeats=self.repeats(self.reference_level))


@dataclass(frozen=True)
class Outcome:
    capacity: int | None
    record: CapacityRecord
    trials: int  # trials run over the whole search
    true_drop: float
    source: SimulatedSource


def simulate_search(search: CapacitySearch, model: NoiseModel, n_scenarios: int,
                    rng: random.Random, *, drop: float = 0.0, from_level: int = 0,
                    source_type: type[SimulatedSource] | None = None,
                    **source_options: object) -> Outcome:
    """One search on a fresh draw of scenarios from `model` (`source_type`: a subclass of
    SimulatedSource, e.g. one that also writes the runs as Harbor job directories)."""
    source_type = source_type or SimulatedSource
    search = search.model_copy(update={"slos": {**SIM_SLO, **search.slos}})
    scenarios = model.scenarios(rng, n_scenarios)
    degraded, true_drop = degraded_set(rng, scenarios, drop, search.reference_level)
    source = source_type(search, model, scenarios, rng, degraded, from_level,
                         search.reference_level, **source_options)
    record = search_loop(search, CEILING, source, CapacityRecord(search=search),
                         reference_level=search.reference_level)
    trials = sum(len(t) for t in source.trials.values())
    return Outcome(record.capacity, record, trials, true_drop, source)


def found(capacity: int | None, level: int) -> bool:
    """A capacity within one doubling below `level` (where the change starts)."""
    return capacity is not None and math.ceil(level / 2) <= capacity < level
