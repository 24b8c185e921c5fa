"""Servers that do what a GPU deployment does across a benchmarking session, for the latency
half of benchmarks/compare_small_n.py's design family (compares with several runs per side).
They were written as held-out servers for the Welch run test (the latency verdict on several
runs per side: Welch's t over the runs' own figures, each side's runs interleaved with the
other's in pairs, each pair AB or BA by a coin flip), committed before it, and run against it
once, after it was fixed (figures in benchmarks/README.md: two of them, compaction and
round-robin replicas, broke its 5 %); design models since.

Each was something a GPU deployment does across a benchmarking session that the design family
then (compare_small_n.py's own models, the courses of compare_drift_courses.py and those of
compare_session_courses.py) did not: discrete rather than Gaussian run levels, structure that
lines up with the pairs of the running order, drifts that heat and cool, carry-over from one
run to the next, heavy-tailed trouble that hits one run in ten, a spread that moves while the
level does not. Several aim at what a t test over two to five runs per side assumes: runs
independent and normal, with one variance. Every server is the same for both sides: it may
depend on the time and on the running order, never on which side a run is on but through that
order.

A server's keys are those of the design models, and add in log: a `course` (COURSES, per wave
of one run, drawn afresh for each run), a *session* course (SESSIONS: `f(rng, waves, order)`,
`waves` per run, `order` the running order as side letters such as "abbaab"; one array of log
load factors per run, in running order, drawn once per compare), and the family's request
options (`heavy`, `counts`). Times are in waves: trials that ran together; a run lasts `waves`.
Between two runs the harness pauses for 5-30 % of a run (it writes the run's results, starts
the next), and what moves with the clock moves through the pause too.

- `round-robin replicas`: two replicas behind a balancer that pins each run's client to the
  next replica in turn, one of them 5-25 % slower (another power cap, PCIe generation or
  driver); between two runs another client takes a turn with probability 0.2. Mostly the
  runs alternate, a period of two runs, which lines up with a pair's two runs;
- `node lottery`: each run is scheduled onto one of 2-4 nodes at random, each node a fixed
  speed for the session (sd 0.1 in log: GPUs of one SKU differed in speed by 8 % on average and
  up to 22 % over five large clusters, Sinha et al. 2022, arXiv:2208.11035). Run levels are a
  few discrete values with little spread within each, so one side can land on the slow node
  every time and look steady;
- `compaction`: a store under the server (a KV cache offloaded to disk, a log-structured
  prefix store) compacts whenever its writes pass a threshold; each run writes 45-80 % of it,
  so about every other run compacts, from the wave the threshold is crossed, for 20-40 % of a
  run (into the pause and the next run if it has not finished), 1.3-2x slower meanwhile.
  Neighbouring runs lean apart: the one after a compaction starts clean;
- `thermal build-up`: the GPUs heat while serving (time constant 1-4 runs) and cool in the
  pauses (time constant 0.1-0.5 run), throttling by up to 5-25 % when hot: within each run a
  rise, across the session a climb that saturates;
- `neighbour tenant`: another tenant's load on the same GPUs comes and goes, on and off in
  stretches of 1-3 runs each (mean, exponential), 1.15-1.6x slower while on (per stretch);
  it switches at any wave, so neighbouring runs, of either side, share it;
- `rare bad runs`: one run in ten hits trouble of heavy-tailed severity (1 + 0.5 Pareto(2):
  median 1.2x, one in ten 2x, one in a hundred 5x): a bad node (the whole run), a prefix
  cache flushed mid-run (from a random wave on), or a hiccup (1-3 waves, 5-20x: a swap storm,
  a collective's time-out and retry); besides, each run its own speed, sd 0.03 in log;
- `spread drifts`: each wave's log factor iid, with an sd that walks across runs (from
  0.05-0.3, times e^N(0, 0.5) per run, kept within 0.02-1): the spread moves (mixes of
  co-running requests, fragmentation), the level does not;
- `restart on switch`: the harness restarts the server whenever the configuration changes
  from one run to the next (a run after one of its own side's keeps a warm server): the
  session's first run starts 2-4x slower for 20-60 % of it (weights into the page cache,
  kernels tuned, graphs captured), every other restart 1.3-2.5x for a random share of the run
  (exponential, mean 15 %, at most 60 %), easing off linearly; warm-ups fall unevenly on the
  sides (by at most one run for any running order of pairs);
- `everything`: node lottery, thermal build-up, neighbour tenant, restart on switch and rare
  bad runs at once, under agent-like requests (the family's `heavy` and `counts`).
"""

from __future__ import annotations

import numpy as np


def _starts(rng: np.random.Generator, waves: int, runs: int) -> np.ndarray:
    """The wave of the session at which each run starts: back to back, but for a pause of
    5-30 % of a run between two (whole waves, at least one)."""
    pauses = np.maximum(1, np.round(rng.uniform(0.05, 0.3, runs) * waves)).astype(int)
    pauses[0] = 0
    return np.cumsum(pauses) + waves * np.arange(runs)


def _cut(course: np.ndarray, starts: np.ndarray, waves: int) -> list[np.ndarray]:
    return [course[start:start + waves] for start in starts]


def round_robin_replicas(rng: np.random.Generator, waves: int, order: str) -> list[np.ndarray]:
    slower = np.log(rng.uniform(1.05, 1.25))
    replica = int(rng.integers(2))
    out = []
    for _ in order:
        out.append(np.full(waves, slower * replica))
        if rng.random() >= 0.2:  # else another client's connection took the turn
            replica = 1 - replica
    return out


def node_lottery(rng: np.random.Generator, waves: int, order: str) -> list[np.ndarray]:
    speeds = rng.normal(0, 0.1, int(rng.integers(2, 5)))
    return [np.full(waves, rng.choice(speeds)) for _ in order]


def compaction(rng: np.random.Generator, waves: int, order: str) -> list[np.ndarray]:
    starts = _starts(rng, waves, len(order))
    fill, left, cost = rng.uniform(0, 1), 0, 0.0
    out = []
    for i, start in enumerate(starts):
        if i:  # the compaction goes on through the pause
            left = max(0, left - int(start - starts[i - 1] - waves))
        per_wave = rng.uniform(0.45, 0.8) / waves
        run = np.zeros(waves)
        for w in range(waves):
            fill += per_wave
            if fill >= 1 and left == 0:
                fill, left = 0.0, int(np.ceil(rng.uniform(0.2, 0.4) * waves))
                cost = np.log(rng.uniform(1.3, 2.0))
            if left > 0:
                run[w], left = cost, left - 1
        out.append(run)
    return out


def _heat(rng: np.random.Generator, waves: int, starts: np.ndarray) -> np.ndarray:
    """Per wave of the session, how hot the GPUs are (0 cold, 1 at the throttling limit)."""
    heat_up, cool = rng.uniform(1, 4) * waves, rng.uniform(0.1, 0.5) * waves
    busy = np.zeros(starts[-1] + waves, dtype=bool)
    for start in starts:
        busy[start:start + waves] = True
    out, h = np.empty(len(busy)), 0.0
    for t, serving in enumerate(busy):
        h = h + (1 - h) / heat_up if serving else h * np.exp(-1 / cool)
        out[t] = h
    return out


def thermal_build_up(rng: np.random.Generator, waves: int, order: str) -> list[np.ndarray]:
    starts = _starts(rng, waves, len(order))
    return _cut(np.log(rng.uniform(1.05, 1.25)) * _heat(rng, waves, starts), starts, waves)


def _neighbour(rng: np.random.Generator, waves: int, length: int) -> np.ndarray:
    """Per wave, the log slowdown another tenant's load puts on the server."""
    mean_on, mean_off = rng.uniform(1, 3) * waves, rng.uniform(1, 3) * waves
    on = rng.random() < mean_on / (mean_on + mean_off)
    out, t = np.zeros(length), 0
    while t < length:
        stretch = max(1, int(round(rng.exponential(mean_on if on else mean_off))))
        if on:
            out[t:t + stretch] = np.log(rng.uniform(1.15, 1.6))
        t, on = t + stretch, not on
    return out


def neighbour_tenant(rng: np.random.Generator, waves: int, order: str) -> list[np.ndarray]:
    starts = _starts(rng, waves, len(order))
    return _cut(_neighbour(rng, waves, starts[-1] + waves), starts, waves)


def rare_bad_runs(rng: np.random.Generator, n: int, side: str) -> np.ndarray:
    out = np.full(n, rng.normal(0, 0.03))
    if rng.random() < 0.1:
        kind, at = rng.integers(3), int(rng.integers(n))
        if kind == 0:  # a bad node
            out += np.log1p(0.5 * rng.pareto(2))
        elif kind == 1:  # the prefix cache flushed
            out[at:] += np.log1p(0.5 * rng.pareto(2))
        else:  # a hiccup
            out[at:at + int(rng.integers(1, 4))] += np.log(rng.uniform(5, 20))
    return out


def spread_drifts(rng: np.random.Generator, waves: int, order: str) -> list[np.ndarray]:
    sd = rng.uniform(0.05, 0.3) * np.exp(np.cumsum(rng.normal(0, 0.5, len(order))))
    return [rng.normal(0, s, waves) for s in np.clip(sd, 0.02, 1.0)]


def restart_on_switch(rng: np.random.Generator, waves: int, order: str) -> list[np.ndarray]:
    out = []
    for i, side in enumerate(order):
        run = np.zeros(waves)
        if i == 0:
            cold, share = rng.uniform(2, 4), rng.uniform(0.2, 0.6)
        elif side != order[i - 1]:
            cold, share = rng.uniform(1.3, 2.5), min(0.6, rng.exponential(0.15))
        else:
            out.append(run)
            continue
        length = max(1, int(round(share * waves)))
        run[:length] = np.log(cold) * np.linspace(1, 0, length, endpoint=False)
        out.append(run)
    return out


def everything(rng: np.random.Generator, waves: int, order: str) -> list[np.ndarray]:
    starts = _starts(rng, waves, len(order))
    session = (np.log(rng.uniform(1.05, 1.25)) * _heat(rng, waves, starts)
               + _neighbour(rng, waves, starts[-1] + waves))
    return [a + b + c for a, b, c in zip(_cut(session, starts, waves),
                                         node_lottery(rng, waves, order),
                                         restart_on_switch(rng, waves, order), strict=True)]


COURSES = {"rare bad runs": rare_bad_runs}
REQUESTS: dict = {}
SESSIONS = {"round-robin replicas": round_robin_replicas, "node lottery": node_lottery,
            "compaction": compaction, "thermal build-up": thermal_build_up,
            "neighbour tenant": neighbour_tenant, "spread drifts": spread_drifts,
            "restart on switch": restart_on_switch, "everything": everything}
# Design models of compare_small_n.py, last in its MODELS and in this order: a model's draws
# are seeded by its place there, so the figures of their one held-out run reproduce.
MODELS: dict[str, dict] = {
    "round-robin replicas": {"session": "round-robin replicas"},
    "node lottery": {"session": "node lottery"},
    "compaction": {"session": "compaction"},
    "thermal build-up": {"session": "thermal build-up"},
    "neighbour tenant": {"session": "neighbour tenant"},
    "rare bad runs": {"course": "rare bad runs"},
    "spread drifts": {"session": "spread drifts"},
    "restart on switch": {"session": "restart on switch"},
    "everything": {"session": "everything", "course": "rare bad runs",
                   "heavy": True, "counts": True},
}
