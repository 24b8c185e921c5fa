"""Drifting and otherwise hard servers of the latency half of benchmarks/compare_small_n.py's
design family. They were written as held-out servers before a change of the latency verdict's
rule (the first six before its long-run-variance rule, the next six before its check of every
latency column at once, the last seven before its drift check on ranks) and were looked at
while it was set, so they are design models now (named without "held-out"); the servers held
out from the rule today are in benchmarks/compare_heldout_servers.py.

Each is a way a server's speed could move through a run that the family's AR(1) wanders do
not cover. Most are *courses*: per wave of trials that ran together, the log of the server's
load factor in one run, drawn independently for each run (so two runs of one server never
share it); requests keep the family's iid lognormal noise on top. The rest (from `prefix
cache` on) shape the requests themselves: a *request shape* gives each trial's requests their
time-to-first-token factors in place of the family's lognormal noise, in running order, with
a state kept through one run (so requests of neighbouring trials can share it), again drawn
independently for each run.

- `step`: the server changes speed once, at a wave drawn from the middle half of the run, by
  a jump of sd 0.3 in log (before it, the run's usual speed);
- `sinusoid`: a slow swing of amplitude 0.3 in log, period 1-3 run lengths, random phase;
- `bursts`: each wave starts a burst with probability 0.1, lasting 1-4 waves, slowing them
  by 1 + Pareto(1.5) (heavy-tailed: now and then 5-10x);
- `one drifts`: the baseline run steady, the other on an AR(1) wander (0.85, sd 0.3): two runs
  whose drift differs;
- `random walk`: a wander with no level to return to, steps of sd 0.08 in log per wave;
- `step+bursts`: `step` and `bursts` at once;
- `regime switch`: a Markov server with two states, fast and 1.5x slower; it enters the slow
  state with probability 0.08 per wave and leaves it with 0.15 (slow ~35 % of the time, in
  stretches of ~7 waves), starting from that mix;
- `periodic stalls`: every k-th wave (k drawn 4-9 per run, from a random offset) a pause,
  like a garbage collector's, slows that wave 2-4x;
- `heavy trend`: heavy-tailed requests on a server whose speed trends through the run, a
  straight line in log from 0 to a slope drawn with sd 0.3 per run;
- `shared sawtooth`: load that builds and is flushed, the same shape in both runs (log
  factor rising 0 to 0.4 over a period of 40 % of the run, then dropping back), each run at
  its own random phase;
- `growing noise`: no drift in the level, but each wave's log factor drawn independently
  with an sd growing from 0 at the start to 0.6 at the end of the run;
- `one long stall`: the baseline run steady, the other with one stall of 10-20 % of its
  waves, from a random start, 2-3x slower throughout;
- `prefix cache`: bimodal requests: a conversation's first request misses the prefix cache,
  each later one hits it with probability 0.7 and then takes 0.15 of a miss's time; a trial
  whose cache was evicted (probability 0.2) misses throughout; lognormal noise sd 0.3 on each;
- `preemption`: memory pressure comes in episodes (each wave starts one with probability
  0.05, lasting 2-8 waves); inside one, each request is preempted with probability 0.3 and
  recomputed, 2-6x slower;
- `warm-up`: each run starts cold, 1.5-4x slower, and settles to its steady speed
  exponentially with a time constant of 1 wave to a tenth of the run;
- `queueing spikes`: lognormal requests (sd 0.5) where now and then (probability 0.02 per
  request) a queue forms and delays that request and the next 1-5 in running order (across
  trials) by a wait of mean 4x a request's time, shrinking as the queue drains;
- `swing + heavier tails`: a swing slower than the run (amplitude 0.15 in log, period 2-5 run
  lengths, random phase) under requests with Pareto tails heavier than the family's
  (1 + Pareto(1.2), times 0.5);
- `scenario offset`: each scenario runs at its own fixed speed within a run (a factor of sd
  0.1 in log, drawn afresh for each run: where its prompts landed, which replica served it),
  over the family's lognormal requests;
- `correlated requests`: consecutive requests lean together (the log noise an AR(1) of
  correlation 0.8 from one request to the next in running order, across trials too,
  marginal sd 0.3): the server's state carries from one request to the next.
"""

from __future__ import annotations

import numpy as np


def ar1(rng: np.random.Generator, n: int, rho: float, sd: float) -> np.ndarray:
    """A stationary AR(1) of `n` steps, correlation `rho` between neighbours, marginal `sd`."""
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
    return np.zeros(n) if side == "a" else ar1(rng, n, 0.85, 0.3)


def random_walk(rng: np.random.Generator, n: int, side: str) -> np.ndarray:
    return np.cumsum(rng.normal(0, 0.08, n))


def step_bursts(rng: np.random.Generator, n: int, side: str) -> np.ndarray:
    return step(rng, n, side) + bursts(rng, n, side)


def regime_switch(rng: np.random.Generator, n: int, side: str) -> np.ndarray:
    enter, leave = 0.08, 0.15
    slow = rng.random() < enter / (enter + leave)
    out = np.empty(n)
    for w in range(n):
        out[w] = np.log(1.5) if slow else 0.0
        slow = (rng.random() >= leave) if slow else (rng.random() < enter)
    return out


def periodic_stalls(rng: np.random.Generator, n: int, side: str) -> np.ndarray:
    every = int(rng.integers(4, 10))
    out = np.zeros(n)
    for w in range(int(rng.integers(0, every)), n, every):
        out[w] = np.log(rng.uniform(2, 4))
    return out


def trend(rng: np.random.Generator, n: int, side: str) -> np.ndarray:
    return np.linspace(0, rng.normal(0, 0.3), n)


def shared_sawtooth(rng: np.random.Generator, n: int, side: str) -> np.ndarray:
    period = max(2.0, 0.4 * n)
    return 0.4 * (((np.arange(n) + rng.uniform(0, period)) % period) / period)


def growing_noise(rng: np.random.Generator, n: int, side: str) -> np.ndarray:
    return rng.normal(0, 1, n) * np.linspace(0, 0.6, n)


def one_long_stall(rng: np.random.Generator, n: int, side: str) -> np.ndarray:
    out = np.zeros(n)
    if side == "a":
        return out
    length = max(1, int(round(rng.uniform(0.1, 0.2) * n)))
    start = int(rng.integers(0, max(1, n - length + 1)))
    out[start:start + length] = np.log(rng.uniform(2, 3))
    return out


def warm_up(rng: np.random.Generator, n: int, side: str) -> np.ndarray:
    cold = np.log(rng.uniform(1.5, 4))
    settle = rng.uniform(1, max(1.0, 0.1 * n))
    return cold * np.exp(-np.arange(n) / settle)


def swing(rng: np.random.Generator, n: int, side: str) -> np.ndarray:
    period = rng.uniform(2, 5) * n
    return 0.15 * np.sin(2 * np.pi * np.arange(n) / period + rng.uniform(0, 2 * np.pi))


COURSES = {"step": step, "sinusoid": sinusoid, "bursts": bursts, "one drifts": one_drifts,
           "random walk": random_walk, "step+bursts": step_bursts,
           "regime switch": regime_switch, "periodic stalls": periodic_stalls,
           "heavy trend": trend, "shared sawtooth": shared_sawtooth,
           "growing noise": growing_noise, "one long stall": one_long_stall,
           "warm-up": warm_up, "swing": swing}


# Request shapes: (rng, calls, where) -> the trial's `calls` TTFT factors. `where`: "side",
# "scenario", "wave" (this trial's), "waves" (the run's), "state" (a dict kept through one run).

def prefix_cache(rng: np.random.Generator, calls: int, where: dict) -> np.ndarray:
    hits = rng.random(calls) < 0.7
    hits[0] = False
    if rng.random() < 0.2:
        hits[:] = False
    return np.where(hits, 0.15, 1.0) * rng.lognormal(0, 0.3, calls)


def preemption(rng: np.random.Generator, calls: int, where: dict) -> np.ndarray:
    state = where["state"]
    if "pressure" not in state:
        pressure = np.zeros(where["waves"], dtype=bool)
        for w in range(where["waves"]):
            if rng.random() < 0.05:
                pressure[w:w + int(rng.integers(2, 9))] = True
        state["pressure"] = pressure
    noise = rng.lognormal(0, 0.3, calls)
    if state["pressure"][where["wave"]]:
        noise *= np.where(rng.random(calls) < 0.3, rng.uniform(2, 6, calls), 1.0)
    return noise


def queueing_spikes(rng: np.random.Generator, calls: int, where: dict) -> np.ndarray:
    state = where["state"]
    out = rng.lognormal(0, 0.5, calls)
    for j in range(calls):
        if state.get("left", 0) <= 0 and rng.random() < 0.02:
            state["left"] = int(rng.integers(2, 7))  # this request and the next 1-5
            state["wait"], state["length"] = rng.exponential(4.0), state["left"]
        if state.get("left", 0) > 0:
            out[j] += state["wait"] * state["left"] / state["length"]
            state["left"] -= 1
    return out


def heavier_tails(rng: np.random.Generator, calls: int, where: dict) -> np.ndarray:
    return (1 + rng.pareto(1.2, calls)) * 0.5


def scenario_offset(rng: np.random.Generator, calls: int, where: dict) -> np.ndarray:
    offsets = where["state"].setdefault("offsets", {})
    if where["scenario"] not in offsets:
        offsets[where["scenario"]] = rng.normal(0, 0.1)
    return np.exp(offsets[where["scenario"]]) * rng.lognormal(0, 0.3, calls)


def correlated_requests(rng: np.random.Generator, calls: int, where: dict) -> np.ndarray:
    state, rho, sd = where["state"], 0.8, 0.3
    level = state.get("level", rng.normal(0, sd))
    out = np.empty(calls)
    for j in range(calls):
        level = rho * level + np.sqrt(1 - rho ** 2) * rng.normal(0, sd)
        out[j] = level
    state["level"] = level
    return np.exp(out)


REQUESTS = {"prefix cache": prefix_cache, "preemption": preemption,
            "queueing spikes": queueing_spikes, "heavier tails": heavier_tails,
            "scenario offset": scenario_offset, "correlated requests": correlated_requests}
# Design models of compare_small_n.py: the family's iid requests on each course, then the
# servers once held out from the drift check on ranks.
MODELS: dict[str, dict] = {name: {"course": name} for name in COURSES
                           if name not in ("warm-up", "swing")}
MODELS["heavy trend"]["heavy"] = True
MODELS |= {
    "prefix cache": {"requests": "prefix cache"},
    "preemption": {"requests": "preemption"},
    "warm-up": {"course": "warm-up"},
    "queueing spikes": {"requests": "queueing spikes"},
    "swing + heavier tails": {"course": "swing", "requests": "heavier tails"},
    "scenario offset": {"requests": "scenario offset"},
    "correlated requests": {"requests": "correlated requests"},
}
