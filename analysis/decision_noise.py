"""Decisions judged against their own noise: the statistics of the consistency check.

On real servers, temperature-0 decoding is not deterministic under dynamic batching, and one
early token flip changes a whole agent trajectory, so two runs of the same scenario at the same
load can disagree. A level's agreement with the reference therefore means nothing on its own;
it is judged against the reference's agreement with itself.

Per scenario, with ≥ 2 repeats at a level L and at the reference level:

- `floor`: mean agreement over the pairs of repeats at L (L's own noise);
- `baseline`: the same at the reference level (the noise the reference has anyway);
- `agreement`: mean over every (L repeat, reference repeat) pair;
- `drop = baseline - agreement`. With no change of behaviour between the levels, a repeat at L
  is another draw from the same distribution as a reference repeat and `drop` averages 0.

A level's decisions pass (non-inferiority) when the one-sided upper confidence bound of the
mean drop over scenarios is below the margin (`--max-drop`). The bound is Student's t on the
per-scenario drops, with the SD taken at least as large as one more scenario at the far end of
the range would make it for identical values, so a level where every scenario agrees still has
an interval as wide as one unseen divergence (never [1, 1]). The confidence per level is
1 - alpha/K, K the most levels a search can judge (Bonferroni: valid in whatever order a
bisection visits levels), so the chance that any judged level passes while its true drop is
at or above the margin is at most alpha. benchmarks/capacity_noise.py measures the error rates
by simulation through these functions.

Plain functions on plain data (scenario -> list of each repeat's calls) so the simulation and
the product run the same code.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations, product
from statistics import NormalDist
from typing import Any

import numpy as np

Calls = list[tuple[str, Any]]
PairMetric = Callable[[Calls, Calls], float]

DEFAULT_ALPHA = 0.05
DEFAULT_MAX_DROP = 0.10
REPORT_CONFIDENCE = 0.95


def t_quantile(p: float, df: float) -> float:
    """Student's t quantile (Cornish-Fisher expansion around the normal; within 1 % of the
    exact value for df ≥ 3 at the tails used here: numpy has no t distribution)."""
    z = NormalDist().inv_cdf(p)
    if not math.isfinite(df) or df <= 0:
        return z
    return (z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)
            + (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / (384 * df ** 3))


def pair_mean(left: Sequence[Calls], right: Sequence[Calls] | None, metric: PairMetric
              ) -> float:
    """Mean of `metric` over the unordered pairs within `left` (right None) or over every
    (left, right) pair; pairs the metric cannot compare (NaN) are left out. NaN: none."""
    pairs = combinations(left, 2) if right is None else product(left, right)
    values = [v for a, b in pairs if not math.isnan(v := metric(a, b))]
    return sum(values) / len(values) if values else math.nan


@dataclass(frozen=True)
class ScenarioAgreement:
    scenario_id: str
    n_level: int
    n_reference: int
    floor: float
    baseline: float
    agreement: float

    @property
    def drop(self) -> float:
        return self.baseline - self.agreement


def scenario_agreements(level: Mapping[str, Sequence[Calls]],
                        reference: Mapping[str, Sequence[Calls]], metric: PairMetric,
                        baselines: Mapping[str, float] | None = None
                        ) -> list[ScenarioAgreement]:
    """One entry per scenario run at `level` (each repeat's calls, lost trials left out).
    `baselines` caches the reference's own agreement per scenario (it is the same at every
    level of a search)."""
    out = []
    for sid, calls in level.items():
        ref = reference.get(sid, [])
        base = baselines[sid] if baselines is not None and sid in baselines else \
            pair_mean(ref, None, metric)
        out.append(ScenarioAgreement(sid, len(calls), len(ref), pair_mean(calls, None, metric),
                                     base, pair_mean(calls, ref, metric) if ref else math.nan))
    return out


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
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    if v.size == 0:
        return math.nan, math.nan, math.nan
    mean = float(v.mean())
    half = t_quantile(0.5 + confidence / 2, v.size - 1) * _smoothed_sd(v, low, high) / math.sqrt(
        v.size)
    return mean, max(low, mean - half), min(high, mean + half)


def drop_bounds(drops: Sequence[float] | np.ndarray, confidence: float
                ) -> tuple[float, float]:
    """One-sided (lower, upper) confidence bounds, each at `confidence`, of the mean drop
    (values in [-1, 1], the bounds clipped to it); NaN: no value."""
    v = np.asarray(drops, dtype=float)
    v = v[~np.isnan(v)]
    if v.size == 0:
        return math.nan, math.nan
    half = t_quantile(confidence, v.size - 1) * _smoothed_sd(v, -1.0, 1.0) / math.sqrt(v.size)
    return max(-1.0, float(v.mean()) - half), min(1.0, float(v.mean()) + half)


def full_agreement_bound(n_scenarios: int, confidence: float) -> float:
    """The drop's upper bound when every scenario agrees perfectly at both levels: the
    smallest margin `n_scenarios` can ever certify."""
    return drop_bounds(np.zeros(max(n_scenarios, 1)), confidence)[1]


def per_level_confidence(alpha: float, k_levels: int) -> float:
    """Bonferroni: each of the K levels a search may judge is tested at alpha/K."""
    return 1.0 - alpha / max(k_levels, 1)


@dataclass(frozen=True)
class DropVerdict:
    """A level's decisions judged: the figures and whether they pass."""

    n: int  # scenarios with a drop (both levels had comparable repeats)
    floor: tuple[float, float, float]  # (mean, low, high), 95 %
    baseline: tuple[float, float, float]
    agreement: tuple[float, float, float]
    drop: tuple[float, float, float]
    drop_lower: float  # one-sided, at the search's per-level confidence
    drop_upper: float
    max_drop: float
    passed: bool
    note: str


def judge_drop(scenarios: Sequence[ScenarioAgreement], max_drop: float, confidence: float
               ) -> DropVerdict:
    """Non-inferiority of a level's decisions: passes when the upper bound of the mean drop
    below the reference's own agreement is under `max_drop`."""
    drops = np.array([s.drop for s in scenarios], dtype=float)
    n = int((~np.isnan(drops)).sum())
    lower, upper = drop_bounds(drops, confidence)
    note = ""
    if n == 0 and not scenarios:
        note = "no scenario to compare"
    elif n == 0 and all(s.n_level < 2 or s.n_reference < 2 for s in scenarios):
        note = "fewer than 2 repeats per scenario: no noise floor"
    elif n == 0:
        note = "no tool calls to compare"
    return DropVerdict(
        n=n, floor=mean_interval([s.floor for s in scenarios]),
        baseline=mean_interval([s.baseline for s in scenarios]),
        agreement=mean_interval([s.agreement for s in scenarios]),
        drop=mean_interval(drops, -1.0, 1.0), drop_lower=lower, drop_upper=upper,
        max_drop=max_drop,
        passed=n > 0 and upper < max_drop, note=note)
