"""Held-out servers for the latency half of benchmarks/compare_small_n.py (`--held-out`):
written and committed before the latency rule that knows each run's place in its pair (first
or second) and its pair, never run while choosing or tuning it, run once at the end and
reported apart from the design family.

Each is something a GPU deployment does across a benchmarking session that the design family
(compare_small_n.py's models, with the courses of compare_drift_courses.py,
compare_session_courses.py and compare_deployment_courses.py) does not. A rule that takes a
run's place and its pair into account removes a speed that alternates with a pair's two runs
and one that moves whole pairs; these aim at what is left: cycles of three runs or of a clock
that keeps no step with the pairs, trouble that spans the boundary of two pairs, a spread (not
only a level) that depends on the place, speeds that depend on the running order through the
switches of configuration (so a server's run figures are not the same whichever way the coins
fell), and heavy-tailed run figures. Every server is the same for both sides: it may depend on
the time and on the running order, never on which side a run is on but through that order.

The interface is compare_deployment_courses.py's: a *session* course (SESSIONS: `f(rng,
waves, order)`, `waves` per run, `order` the running order as side letters such as "abbaab",
pairs of runs one after another; one array of log load factors per run, in running order,
drawn once per compare), and the family's request options (`heavy`, `counts`). Times are in
waves, trials that ran together; a run lasts `waves`. Between two runs the harness pauses for
5-30 % of a run; where said, before a pair's first run for longer (it writes the pair's
results, the operator's script takes its turn).

- `three replicas`: a balancer that pins each run's client to the next of three replicas in
  turn (one connection a run, balanced per connection), each replica at its own speed for the
  session (sd 0.1 in log, as GPUs of one SKU differ: 8 % on average and up to 22 % over five
  large clusters, Sinha et al. 2022, arXiv:2208.11035), each run 2 % of its own; another
  client takes a turn between two runs with probability 0.15. A period of three runs keeps
  no step with the pairs: over five pairs, one replica's runs mostly fall first, second,
  first, second in four of them, and in one session in eight all four go to one side;
- `cache cycle`: a cache that outlives the runs (a KV tier offloaded to host memory, a prefix
  store) warms while the server serves, hits saving 10-40 % in log when full (it fills with a
  time constant of 1-3 runs of serving), and is emptied on the clock (a TTL, a cron flush)
  every 2.5-4.5 runs' time at a random phase: a sawtooth over about three runs, each run
  faster than the one before until the flush;
- `idle warm-up`: the harness pauses 30-150 % of a run before each pair (5-30 % within one),
  and a server idle past its timeout (0.2-0.8 run, per session) has gone cold: past it, the
  GPU clocks dropped (1.1-1.4x slower, for an exponential share of the run, mean 10 %); past
  three times it, the platform scaled it in and brings it back (1.5-3x, mean share 25 %,
  at most 60 %), both easing off linearly; the session's first run starts cold. Warm-ups,
  and so a run's spread, fall mostly on a pair's first runs, by how long the pause was;
- `ageing`: the harness restarts the server whenever the configuration changes (a run after
  one of its own side's keeps it), and a server slows with its uptime once it has served for
  0.5-1.2 runs (memory fragmentation, a host-memory KV tier starting to spill to disk), by
  0.05-0.25 in log per run of uptime beyond that; with pairs, a restart comes before every
  second run of a pair, so the runs it hits are the second ones after a switch: a pair's
  first runs when the pair before ended on the same side;
- `cron job`: another tenant's job on the same GPUs starts on a schedule, every 3-5 runs'
  time (pauses included) at a random phase, and lasts 1-2 runs, 1.2-1.8x slower meanwhile:
  trouble of about a pair's length that mostly straddles two pairs;
- `heavy-tailed runs`: each run its own slowdown, |Cauchy| of scale 0.03 in log, at most
  10x: half the runs within 3 %, one in ten 1.2x or more, one in 36 2x or more, one in 120
  at 10x (a run's path through shared storage, network and placement; other tenants move
  performance a long way on some clouds, Leitner and Cito 2016, doi:10.1145/2885497);
- `moved between pairs`: in the long pause before each pair (as `idle warm-up`'s) the
  platform reclaims the idle server with probability 0.5 and places it anew, on one of 2-4
  nodes at the session's own speeds (sd 0.1 in log): jumps at pairs' boundaries, under a
  slow drift through the session (AR(1), correlation time three runs, sd 0.1 in log);
- `everything`: three replicas, idle warm-up, ageing, the cron job and heavy-tailed runs at
  once, on one clock, under agent-like requests (the family's `heavy` and `counts`).
"""

from __future__ import annotations

import numpy as np

from benchmarks.compare_drift_courses import ar1

WITHIN_PAIRS = (0.05, 0.3)  # the pause before a run, as a share of a run
BEFORE_PAIRS = (0.3, 1.5)  # before a pair's first run, where the harness takes longer


def _starts(rng: np.random.Generator, waves: int, order: str,
            before_pairs: tuple[float, float] = WITHIN_PAIRS) -> np.ndarray:
    """The wave of the session at which each run starts: back to back, but for a pause of
    5-30 % of a run before each run (`before_pairs` before a pair's first run; whole waves, at
    least one), none before the first."""
    pauses = rng.uniform(*WITHIN_PAIRS, len(order))
    pauses[::2] = rng.uniform(*before_pairs, len(pauses[::2]))
    pauses = np.maximum(1, np.round(pauses * waves)).astype(int)
    pauses[0] = 0
    return np.cumsum(pauses) + waves * np.arange(len(order))


def _cut(course: np.ndarray, starts: np.ndarray, waves: int) -> list[np.ndarray]:
    return [course[start:start + waves] for start in starts]


def _busy(starts: np.ndarray, waves: int) -> np.ndarray:
    """Per wave of the session, whether a run is being served."""
    busy = np.zeros(starts[-1] + waves, dtype=bool)
    for start in starts:
        busy[start:start + waves] = True
    return busy


def three_replicas(rng: np.random.Generator, waves: int, order: str) -> list[np.ndarray]:
    speeds = rng.normal(0, 0.1, 3)
    replica = int(rng.integers(3))
    out = []
    for _ in order:
        out.append(np.full(waves, speeds[replica] + rng.normal(0, 0.02)))
        # The next replica, or the one after when another client's connection took a turn.
        replica = (replica + 1 + int(rng.random() < 0.15)) % 3
    return out


def cache_cycle(rng: np.random.Generator, waves: int, order: str) -> list[np.ndarray]:
    starts = _starts(rng, waves, order)
    busy = _busy(starts, waves)
    period = rng.uniform(2.5, 4.5) * waves
    flushes = {int(t) for t in rng.uniform(0, period) + period * np.arange(len(busy) / period)}
    fill_time, gain = rng.uniform(1, 3) * waves, rng.uniform(0.1, 0.4)
    course, fill = np.empty(len(busy)), 0.0
    for t, serving in enumerate(busy):
        if t in flushes:
            fill = 0.0
        if serving:
            fill += (1 - fill) / fill_time
        course[t] = -gain * fill
    return _cut(course, starts, waves)


def _warm_up(waves: int, cold: float, share: float) -> np.ndarray:
    """A run's log slowdown from a cold start `cold` times slower, easing off linearly over
    `share` of the run (at least one wave)."""
    run = np.zeros(waves)
    length = max(1, int(round(min(share, 1.0) * waves)))
    run[:length] = np.log(cold) * np.linspace(1, 0, length, endpoint=False)
    return run


def _idle_warm_up(rng: np.random.Generator, waves: int, starts: np.ndarray
                  ) -> list[np.ndarray]:
    timeout = rng.uniform(0.2, 0.8) * waves
    out = []
    for i, start in enumerate(starts):
        idle = np.inf if i == 0 else start - starts[i - 1] - waves
        if idle > 3 * timeout:  # scaled in: brought back on a cold replica
            out.append(_warm_up(waves, rng.uniform(1.5, 3),
                                min(0.6, rng.exponential(0.25))))
        elif idle > timeout:  # clocks dropped
            out.append(_warm_up(waves, rng.uniform(1.1, 1.4), rng.exponential(0.1)))
        else:
            out.append(np.zeros(waves))
    return out


def idle_warm_up(rng: np.random.Generator, waves: int, order: str) -> list[np.ndarray]:
    return _idle_warm_up(rng, waves, _starts(rng, waves, order, BEFORE_PAIRS))


def _ageing(rng: np.random.Generator, waves: int, order: str, starts: np.ndarray
            ) -> list[np.ndarray]:
    onset, rate = rng.uniform(0.5, 1.2) * waves, rng.uniform(0.05, 0.25) / waves
    out, up_since = [], 0
    for i, start in enumerate(starts):
        if i == 0 or order[i] != order[i - 1]:  # restarted with the other configuration
            up_since = start
        uptime = start + np.arange(waves) - up_since
        out.append(rate * np.maximum(0.0, uptime - onset))
    return out


def ageing(rng: np.random.Generator, waves: int, order: str) -> list[np.ndarray]:
    return _ageing(rng, waves, order, _starts(rng, waves, order))


def _cron_job(rng: np.random.Generator, waves: int, starts: np.ndarray) -> np.ndarray:
    """Per wave of the session, the log slowdown another tenant's scheduled job puts on it."""
    period, length = rng.uniform(3, 5) * waves, rng.uniform(1, 2) * waves
    t = np.arange(starts[-1] + waves)
    return np.where((t + rng.uniform(0, period)) % period < length,
                    np.log(rng.uniform(1.2, 1.8)), 0.0)


def cron_job(rng: np.random.Generator, waves: int, order: str) -> list[np.ndarray]:
    starts = _starts(rng, waves, order)
    return _cut(_cron_job(rng, waves, starts), starts, waves)


def heavy_tailed_runs(rng: np.random.Generator, waves: int, order: str) -> list[np.ndarray]:
    return [np.full(waves, min(np.log(10), 0.03 * abs(rng.standard_cauchy()))) for _ in order]


def moved_between_pairs(rng: np.random.Generator, waves: int, order: str) -> list[np.ndarray]:
    starts = _starts(rng, waves, order, BEFORE_PAIRS)
    nodes = rng.normal(0, 0.1, int(rng.integers(2, 5)))
    node, out = rng.choice(nodes), []
    for i in range(len(order)):
        if i % 2 == 0 and i and rng.random() < 0.5:  # reclaimed while idle, placed anew
            node = rng.choice(nodes)
        out.append(np.full(waves, node))
    drift = ar1(rng, starts[-1] + waves, np.exp(-1 / (3 * waves)), 0.1)
    return [run + part for run, part in zip(out, _cut(drift, starts, waves), strict=True)]


def everything(rng: np.random.Generator, waves: int, order: str) -> list[np.ndarray]:
    starts = _starts(rng, waves, order, BEFORE_PAIRS)
    parts = (three_replicas(rng, waves, order), _idle_warm_up(rng, waves, starts),
             _ageing(rng, waves, order, starts),
             _cut(_cron_job(rng, waves, starts), starts, waves),
             heavy_tailed_runs(rng, waves, order))
    return [np.sum(runs, axis=0) for runs in zip(*parts, strict=True)]


COURSES: dict = {}
REQUESTS: dict = {}
# Named as their models, so no key clashes with the design family's courses in
# compare_small_n.py's merged SESSIONS (it has an `everything` of its own).
SESSIONS = {"held-out three replicas": three_replicas, "held-out cache cycle": cache_cycle,
            "held-out idle warm-up": idle_warm_up, "held-out ageing": ageing,
            "held-out cron job": cron_job, "held-out heavy-tailed runs": heavy_tailed_runs,
            "held-out moved between pairs": moved_between_pairs,
            "held-out everything": everything}
# The models compare_small_n.py runs with --held-out.
MODELS: dict[str, dict] = {name: {"session": name} for name in SESSIONS}
MODELS["held-out everything"] |= {"heavy": True, "counts": True}
