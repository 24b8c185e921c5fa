"""Servers whose speed moves across a whole session of runs, for the latency half of
benchmarks/compare_small_n.py's design family (compares with several runs per side).

A session is the runs of both sides of a compare, one after another in their running order
(pairs of runs, each pair AB or BA). A *session course* is the server's own time course over
the whole session: per wave of trials that ran together, the log of its load factor, drawn
once per compare and cut into the runs in running order. It adds to whatever the model
draws within each run (a run's course, its AR(1) wander, its request shapes). Each is a way a
server drifts slower than a run, which shifts whole runs against each other exactly as a real
difference would and which nothing inside one run shows:

- `session drift`: an AR(1) wander through the session, its correlation time two runs (per
  wave, exp(-1 / (2 * waves per run))), sd 0.3 in log;
- `session trend`: a straight line in log through the session, from 0 to an end drawn with
  sd 0.3 (warming caches, a filling disk, a neighbour's load building);
- `session swing`: a swing of amplitude 0.3 in log with a period of 2-6 runs, random phase
  (a period near two runs lines up with runs that alternate);
- `run offsets`: each run at its own fixed speed, iid per run, sd 0.2 in log (a fresh
  server process, a different replica or placement per run);
- `session walk`: a random walk through the session with no level to return to, steps of sd
  0.2 / sqrt(waves per run) per wave (sd 0.2 per run's length);
- `session step`: the server changes speed once, at a wave drawn anywhere in the session, by
  a jump of sd 0.3 in log.

A course is `f(rng, waves, order) -> list[np.ndarray]`: `waves` per run, `order` the running
order as side letters (e.g. "abbaab"), one log-load-factor array per run in running order.
"""

from __future__ import annotations

import numpy as np

from benchmarks.compare_drift_courses import ar1


def _runs(course: np.ndarray, order: str) -> list[np.ndarray]:
    return np.split(course, len(order))


def session_drift(rng: np.random.Generator, waves: int, order: str) -> list[np.ndarray]:
    return _runs(ar1(rng, waves * len(order), np.exp(-1 / (2 * waves)), 0.3), order)


def session_trend(rng: np.random.Generator, waves: int, order: str) -> list[np.ndarray]:
    return _runs(np.linspace(0, rng.normal(0, 0.3), waves * len(order)), order)


def session_swing(rng: np.random.Generator, waves: int, order: str) -> list[np.ndarray]:
    period = rng.uniform(2, 6) * waves
    t = np.arange(waves * len(order))
    return _runs(0.3 * np.sin(2 * np.pi * t / period + rng.uniform(0, 2 * np.pi)), order)


def run_offsets(rng: np.random.Generator, waves: int, order: str) -> list[np.ndarray]:
    return [np.full(waves, rng.normal(0, 0.2)) for _ in order]


def session_walk(rng: np.random.Generator, waves: int, order: str) -> list[np.ndarray]:
    return _runs(np.cumsum(rng.normal(0, 0.2 / np.sqrt(waves), waves * len(order))), order)


def session_step(rng: np.random.Generator, waves: int, order: str) -> list[np.ndarray]:
    total = waves * len(order)
    at = int(rng.integers(0, total))
    return _runs(np.where(np.arange(total) >= at, rng.normal(0, 0.3), 0.0), order)


SESSIONS = {"session drift": session_drift, "session trend": session_trend,
            "session swing": session_swing, "run offsets": run_offsets,
            "session walk": session_walk, "session step": session_step}
# Design models of compare_small_n.py: the family's iid requests under each session course.
MODELS: dict[str, dict] = {name: {"session": name} for name in SESSIONS}
