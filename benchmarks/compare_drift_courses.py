"""Drifting servers of the latency half of benchmarks/compare_small_n.py's design family. They
were written as held-out servers before the latency verdict's long-run-variance rule and were
looked at while it was set, so they are design models now (named without "held-out"); the
servers held out from the rule today are in benchmarks/compare_heldout_servers.py.

Each is a way a server's speed could move through a run that the family's AR(1) wanders do
not cover. A model is a *course*: per wave of trials that ran together, the log of the
server's load factor in one run, drawn independently for each run (so two runs of one
server never share it). Requests keep the family's iid lognormal noise on top.

- `step`: the server changes speed once, at a wave drawn from the middle half of the run, by
  a jump of sd 0.3 in log (before it, the run's usual speed);
- `sinusoid`: a slow swing of amplitude 0.3 in log, period 1-3 run lengths, random phase;
- `bursts`: each wave starts a burst with probability 0.1, lasting 1-4 waves, slowing them
  by 1 + Pareto(1.5) (heavy-tailed: now and then 5-10x);
- `one drifts`: the baseline run steady, the other on an AR(1) wander (0.85, sd 0.3): two runs
  whose drift differs;
- `random walk`: a wander with no level to return to, steps of sd 0.08 in log per wave;
- `step+bursts`: `step` and `bursts` at once.
"""

from __future__ import annotations

import numpy as np


def _ar1(rng: np.random.Generator, n: int, rho: float, sd: float) -> np.ndarray:
    noise = rng.normal(0, sd, n)
    level = np.empty(n)
    for w in range(n):
        level[w] = noise[w] if w == 0 else rho * level[w - 1] + np.sqrt(1 - rho ** 2) * noise[w]
    return level


def step(rng: np.random.Generator, n: int, side: str) -> np.ndarray:
    at = int(rng.integers(n // 4, max(n // 4 + 1, 3 * n // 4 + 1)))
    return np.where(np.arange(n) >= at, rng.normal(0, 0.3), 0.0)


def sinusoid(rng: np.random.Generator, n: int, side: str) -> np.ndarray:
    period = rng.uniform(1, 3) * n
    return 0.3 * np.sin(2 * np.pi * np.arange(n) / period + rng.uniform(0, 2 * np.pi))


def bursts(rng: np.random.Generator, n: int, side: str) -> np.ndarray:
    out = np.zeros(n)
    for w in range(n):
        if rng.random() < 0.1:
            out[w:w + int(rng.integers(1, 5))] += np.log1p(rng.pareto(1.5))
    return out


def one_drifts(rng: np.random.Generator, n: int, side: str) -> np.ndarray:
    return np.zeros(n) if side == "a" else _ar1(rng, n, 0.85, 0.3)


def random_walk(rng: np.random.Generator, n: int, side: str) -> np.ndarray:
    return np.cumsum(rng.normal(0, 0.08, n))


def step_bursts(rng: np.random.Generator, n: int, side: str) -> np.ndarray:
    return step(rng, n, side) + bursts(rng, n, side)


COURSES = {"step": step, "sinusoid": sinusoid, "bursts": bursts, "one drifts": one_drifts,
           "random walk": random_walk, "step+bursts": step_bursts}
# Design models of compare_small_n.py: the family's iid requests on each course.
MODELS: dict[str, dict] = {name: {"course": name} for name in COURSES}
