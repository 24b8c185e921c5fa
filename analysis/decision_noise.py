"""Decisions judged as distributions: the statistic of the capacity search's decision check
and of the report's consistency table.

On real servers temperature-0 decoding is not deterministic under dynamic batching, and one
early token flip changes a whole agent trajectory, so the runs of one scenario at one load form
a *distribution* of decisions: most scenarios always end the same way, a few flip between near
ties. A load changes decisions when it changes that distribution — not when a run at the load
disagrees with one run of the reference, which noise alone makes happen.

**The statistic.** Let k(x, y) be the agreement of two runs' decisions (tool-name F1; two
declines agree). Per scenario, with P the level's distribution and Q the reference's,

    divergence = (A(P, P) + A(Q, Q)) / 2 - A(P, Q),      A(P, Q) = E k(X, Y), X ~ P, Y ~ Q

(`own`, `reference_own` and `across` below). Set-F1 is a positive-definite kernel on sets
(2|a∩b|/(|a|+|b|) = 2∫ Σ_i 1[i∈a]e^{-t|a|} 1[i∈b]e^{-t|b|} dt, an inner product; a decline is
its own orthogonal point), so the divergence is half the squared distance between P's and Q's
mean embeddings (the kernel two-sample distance, MMD², halved): ≥ 0, and 0 when the two
distributions are the same. Why this and not `A(Q, Q) - A(P, Q)` (the reference's agreement
with itself minus the agreement with it, the `drop` shown beside it): if a scenario flips to its
alternatives with probability p at the reference and p' at the level, with the same
alternatives, P - Q = (p' - p)(alternatives - centre), so the divergence is (p' - p)² times a
constant ≤ 1 — second order in a change of the *amount* of noise — while the drop is first
order in it (p' - p)(1 - 2p)·g, so a noisier level with the same decisions at its centre reads
as a drop. A scenario that switches to another trajectory moves its centre: divergence = 1 -
k(new, old) for a scenario that never diverged, the same figure the drop gives; on such
scenarios the margin keeps its meaning, points of tool-name F1 lost. The price of second
order: a scenario that goes wrong in a share r of its runs counts r² (not r) of a full switch.

**Estimates.** Per scenario, unbiased: `own` is the mean agreement over pairs of the level's
repeats, `reference_own` the same at the reference, `across` the mean over every (level,
reference) pair. Repeats that ran side by side (and those chained to them through other repeats
that did) are correlated — they can share a batch — so pairs inside such a group are left out
of `own`; a scenario with no pair of repeats apart has no estimate. Lost trials are left out of
every pair.

**The verdict (non-inferiority with a margin).** The mean divergence over scenarios, with a
one-sided upper bound (Student's t over scenarios, the SD at least what one more scenario at
the far end of [-1, 1] would give, so every scenario agreeing still leaves an open interval):
`intact` when the upper bound is under the margin, `degraded` when a lower bound is at the
margin or above, `inconclusive` otherwise. The confidence of each is set by the search
(bankbench/capacity/sequential.py): passing a level is the claim, so its bound spends alpha
across levels and looks; showing a level degraded only stops the climb, so its bound spends
alpha across one level's looks. The bound is a normal
approximation over scenarios; its error rates are measured by simulation through these
functions (benchmarks/capacity_noise.py), not assumed.

Plain functions on plain data (scenario -> each repeat's calls) so the simulation and the
product run the same code.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any, Literal

import numpy as np

from analysis.metrics.student_t import t_quantile

Calls = list[tuple[str, Any]]
PairMetric = Callable[[Calls, Calls], float]
Outcome = Literal["intact", "degraded", "inconclusive", "undecidable"]

DEFAULT_ALPHA = 0.05
DEFAULT_MARGIN = 0.10
REPORT_CONFIDENCE = 0.95


def declines_agree(metric: PairMetric) -> PairMetric:
    """`metric`, except that two runs that called no tool agree (a decline is a decision)."""
    def agreement(a: Calls, b: Calls) -> float:
        return 1.0 if not a and not b else metric(a, b)

    return agreement


def _distinct(runs: Sequence[Calls]) -> tuple[list[Calls], list[int]]:
    """The distinct runs and each run's index among them (most scenarios repeat one decision:
    the metric is computed once per distinct pair)."""
    distinct: list[Calls] = []
    index = []
    for run in runs:
        for k, seen in enumerate(distinct):
            if seen == run:
                index.append(k)
                break
        else:
            index.append(len(distinct))
            distinct.append(run)
    return distinct, index


def pair_mean(left: Sequence[Calls], right: Sequence[Calls] | None, metric: PairMetric,
              left_out: set[tuple[int, int]] | frozenset = frozenset()) -> float:
    """Mean of `metric` over the unordered pairs within `left` (right None; index pairs in
    `left_out` skipped) or over every (left, right) pair; pairs the metric cannot compare
    (NaN) are left out. NaN: none."""
    runs = list(left) if right is None else [*left, *right]
    distinct, index = _distinct(runs)
    m = len(distinct)
    value = [[math.nan] * m for _ in range(m)]
    for a in range(m):
        for b in range(a, m):
            value[a][b] = value[b][a] = metric(distinct[a], distinct[b])
    count = [[0] * m for _ in range(m)]  # pairs of each kind of run, by distinct index
    if right is None:
        n_left = [0] * m
        for k in index:
            n_left[k] += 1
        for a in range(m):
            count[a][a] = n_left[a] * (n_left[a] - 1) // 2
            for b in range(a + 1, m):
                count[a][b] = n_left[a] * n_left[b]
        for i, j in left_out:
            if i < len(left) and j < len(left):
                a, b = sorted((index[i], index[j]))
                count[a][b] -= 1
    else:
        n_a, n_b = [0] * m, [0] * m
        for k in index[:len(left)]:
            n_a[k] += 1
        for k in index[len(left):]:
            n_b[k] += 1
        for a in range(m):
            for b in range(m):
                lo, hi = min(a, b), max(a, b)
                count[lo][hi] += n_a[a] * n_b[b]
    total = weight = 0.0
    for a in range(m):
        for b in range(a, m):
            if count[a][b] and not math.isnan(value[a][b]):
                total += count[a][b] * value[a][b]
                weight += count[a][b]
    return total / weight if weight else math.nan


def side_by_side_groups(n: int, overlapping: set[tuple[int, int]] | frozenset
                        ) -> set[tuple[int, int]]:
    """Every pair (i < j) of the n repeats joined by a chain of repeats that ran side by side
    (`overlapping`: index pairs whose run intervals met)."""
    if not overlapping:
        return set()
    group = list(range(n))

    def root(i: int) -> int:
        while group[i] != i:
            group[i] = group[group[i]]
            i = group[i]
        return i

    for i, j in overlapping:
        if i < n and j < n:
            group[root(i)] = root(j)
    return {(i, j) for i, j in combinations(range(n), 2) if root(i) == root(j)}


@dataclass(frozen=True)
class ScenarioDivergence:
    scenario_id: str
    n_level: int
    n_reference: int
    own: float  # the level's repeats with each other (pairs apart only)
    reference_own: float  # the reference's repeats with each other
    across: float  # every (level repeat, reference repeat) pair
    called: bool = True  # some repeat on either side called a tool

    @property
    def divergence(self) -> float:
        return (self.own + self.reference_own) / 2 - self.across

    @property
    def drop(self) -> float:
        """The reference's agreement with itself minus the agreement with it (shown, not
        judged: it reads a noisier level as a change)."""
        return self.reference_own - self.across


def scenario_divergences(level: Mapping[str, Sequence[Calls]],
                         reference: Mapping[str, Sequence[Calls]], metric: PairMetric, *,
                         level_overlaps: Mapping[str, set[tuple[int, int]]] | None = None,
                         reference_overlaps: Mapping[str, set[tuple[int, int]]] | None = None,
                         reference_own: Mapping[str, float] | None = None
                         ) -> list[ScenarioDivergence]:
    """One entry per scenario run at `level` (each repeat's calls, lost trials left out).
    `*_overlaps`: per scenario, index pairs (into its list) of repeats that ran side by side;
    `reference_own` caches the reference's own agreement (the same at every level)."""
    out = []
    for sid, calls in level.items():
        ref = reference.get(sid, [])
        if reference_own is not None and sid in reference_own:
            base = reference_own[sid]
        else:
            ref_apart = side_by_side_groups(len(ref), (reference_overlaps or {}).get(sid, set()))
            base = pair_mean(ref, None, metric, ref_apart)
        apart = side_by_side_groups(len(calls), (level_overlaps or {}).get(sid, set()))
        if calls and ref and all(run == calls[0] for run in (*calls, *ref)):
            # one decision on both sides (most scenarios): one value of the metric
            same = metric(calls[0], calls[0])
            own = same if len(apart) < len(calls) * (len(calls) - 1) // 2 else math.nan
            out.append(ScenarioDivergence(sid, len(calls), len(ref), own, base, same,
                                          called=bool(calls[0])))
            continue
        out.append(ScenarioDivergence(
            sid, len(calls), len(ref), pair_mean(calls, None, metric, apart), base,
            pair_mean(calls, ref, metric) if ref else math.nan,
            called=any(calls) or any(ref)))
    return out


def as_reference(scenarios: Sequence[ScenarioDivergence]) -> list[ScenarioDivergence]:
    """The reference level judged against itself: it agrees with the reference as much as it
    agrees with itself (divergence 0), not as much as each repeat agrees with itself too."""
    return [ScenarioDivergence(s.scenario_id, s.n_level, s.n_reference, s.reference_own,
                               s.reference_own, s.reference_own, s.called) for s in scenarios]


def _clean(values: Sequence[float] | np.ndarray) -> np.ndarray:
    v = np.asarray(values, dtype=float)
    return v[~np.isnan(v)]


def _smoothed_sd(values: np.ndarray, low: float, high: float) -> float:
    """Sample SD, but at least d/√(n+1), d the distance from the mean to the farther end of
    [low, high]: what one more value there would give a set of identical values. A level
    where every scenario agrees is not certain; noisy data are left as they are."""
    mean = float(values.mean())
    far = max(mean - low, high - mean)
    sd = float(values.std(ddof=1)) if values.size > 1 else 0.0
    return max(sd, far / math.sqrt(values.size + 1))


def mean_interval(values: Sequence[float] | np.ndarray, low: float = 0.0, high: float = 1.0,
                  confidence: float = REPORT_CONFIDENCE) -> tuple[float, float, float]:
    """(mean, low, high): two-sided smoothed t interval of a mean of values in [low, high]
    (clipped to it); NaN values left out; no value: NaN."""
    v = _clean(values)
    if v.size == 0:
        return math.nan, math.nan, math.nan
    mean = float(v.mean())
    half = t_quantile(0.5 + confidence / 2, v.size - 1) * _smoothed_sd(v, low, high) / math.sqrt(
        v.size)
    return mean, max(low, mean - half), min(high, mean + half)


def mean_bounds(values: Sequence[float] | np.ndarray, confidence: float,
                low: float = -1.0, high: float = 1.0) -> tuple[float, float]:
    """One-sided (lower, upper) bounds, each at `confidence`, of the mean of values in
    [low, high] (clipped to it), smoothed SD as in `mean_interval`; NaN: no value."""
    v = _clean(values)
    if v.size == 0:
        return math.nan, math.nan
    half = t_quantile(confidence, v.size - 1) * _smoothed_sd(v, low, high) / math.sqrt(v.size)
    return max(low, float(v.mean()) - half), min(high, float(v.mean()) + half)


def full_agreement_bound(n_scenarios: int, confidence: float) -> float:
    """The divergence's upper bound when every scenario agrees perfectly on both sides: the
    smallest margin `n_scenarios` can ever certify at this confidence."""
    return mean_bounds(np.zeros(max(n_scenarios, 1)), confidence)[1]


@dataclass(frozen=True)
class DivergenceVerdict:
    """A level's decisions judged at one look: the figures and the outcome."""

    n: int  # scenarios with an estimate (a pair apart at the level, ≥ 2 reference repeats)
    divergence: tuple[float, float, float]  # (mean, low, high), 95 %
    lower: float  # one-sided, at `stop_confidence`: degraded when it reaches the margin
    upper: float  # one-sided, at `confidence`: intact when it is under the margin
    confidence: float
    stop_confidence: float
    margin: float
    outcome: Outcome
    note: str
    own: tuple[float, float, float]
    reference_own: tuple[float, float, float]
    across: tuple[float, float, float]
    drop: tuple[float, float, float]


def judge_divergence(scenarios: Sequence[ScenarioDivergence], margin: float,
                     confidence: float, stop_confidence: float | None = None
                     ) -> DivergenceVerdict:
    """intact (upper bound at `confidence` < margin), degraded (lower bound at
    `stop_confidence`, default the same, ≥ margin), inconclusive, or undecidable: nothing to
    compare (no scenario, or no run on either side called a tool — a model that never calls
    one has made no decision, however well its runs agree)."""
    stop_confidence = confidence if stop_confidence is None else stop_confidence
    values = np.array([s.divergence for s in scenarios], dtype=float)
    n = int((~np.isnan(values)).sum())
    upper = mean_bounds(values, confidence)[1]
    lower = mean_bounds(values, stop_confidence)[0]
    note, outcome = "", "inconclusive"
    if not scenarios:
        note, outcome = "no scenario to compare", "undecidable"
    elif not any(s.called for s in scenarios):
        note, outcome = "no tool calls to compare", "undecidable"
    elif n == 0 and all(s.n_level < 2 or s.n_reference < 2 for s in scenarios):
        note = "fewer than 2 repeats per scenario: no noise floor"
    elif n == 0:
        note = "no repeats apart to compare (they ran side by side)"
    elif upper < margin:
        outcome = "intact"
    elif lower >= margin:
        outcome = "degraded"
    return DivergenceVerdict(
        n=n, divergence=mean_interval(values, -1.0, 1.0), lower=lower, upper=upper,
        confidence=confidence, stop_confidence=stop_confidence, margin=margin,
        outcome=outcome,  # type: ignore[arg-type]
        note=note,
        own=mean_interval([s.own for s in scenarios]),
        reference_own=mean_interval([s.reference_own for s in scenarios]),
        across=mean_interval([s.across for s in scenarios]),
        drop=mean_interval([s.drop for s in scenarios], -1.0, 1.0))
