"""Whether two runs' request figures differ, tested on trials and on stretches of time.

Each run's figure is first taken within each trial (its requests' q-th percentile, or their
mean, e.g. the share that failed). Two tests then ask "do the runs differ?", and a
difference is called only when both say so (p is the larger of the two: an intersection-union
test, so whichever of them is exact under the run's real noise holds the level):

- **trials, paired**: the r-th trial of a scenario in one run with the r-th in the other (start
  order); their difference's sign is a coin toss when the runs do not differ, so the signed
  ranks of the differences (Wilcoxon's statistic: a few very slow trials weigh by their rank)
  are compared with every pattern of signs (all 2^n up to EXACT_UP_TO pairs, else SWAPS drawn).
  Exact when trials are independent: heavy tails, a few slow trials, uneven request counts and
  repeats keep it so. Not when trials that ran together share the server's moments;
- **time blocks**: trials that ran together share the server's moments, so whole blocks of as
  many trials as ran together (the concurrency), in running order, are the units. With
  MIN_PAIRED_BLOCKS blocks or more, the pairs' differences summed per block, by signed ranks
  (blocks at one point of both runs hold the same scenarios: what the scenarios bring
  cancels); with fewer, each run's blocks summarised by their trials' mean figure and compared
  by rank sum (Mann-Whitney) over every split of the pooled blocks (or SWAPS drawn) —
  unpaired, which scenario differences between blocks only make conservative. Which of the
  two runs is fixed by the design (trials and concurrency), never by the data. At concurrency
  1 nothing ran together and the paired trials alone decide.

Why per trial: a percentile of the two runs' pooled requests, swapped unit by unit, is moved
only by the units whose requests sit near that percentile, so a shift of every request would
read as nothing; per-trial figures weigh every trial the same and see it. A server whose speed
wanders through each run is held by neither test: a difference is also required to stand
clear of the run's own visible wander (`analysis.metrics.wander`); a wander that shifts a whole
run with little movement inside it is held by nothing on one pair of runs (repeat the runs).
"""

from __future__ import annotations

import itertools
from functools import cache
from math import comb

import numpy as np
import pandas as pd

from analysis.metrics.wander import block_means, clear_of_wander

EXACT_UP_TO = 16
EXACT_SPLITS = 50_000
# Paired blocks give 2^w sign patterns: from 10 blocks a two-sided p can reach 0.002.
MIN_PAIRED_BLOCKS = 10
SWAPS = 20_000
SEED = 0
# The slowdown a latency verdict must be able to see: a run that would not call it says it
# cannot tell (analysis/compare.py), rather than "no clear difference".
EFFECT = 1.5
# What a side of the tests reads: one row per request.
COLUMNS = ("scenario_id", "trial", "start_unix_ns", "value")


def _per_trial(frame: pd.DataFrame, qs: tuple[float | None, ...]) -> pd.DataFrame:
    """One row per trial in start order, indexed by its unit (scenario, r-th trial of it by
    start): its start position in the run and its figure per q (columns 0..len(qs)-1)."""
    rows = frame[~np.isnan(frame["value"].to_numpy(dtype=float))]
    codes, _ = pd.factorize(rows["trial"], sort=False)
    values = rows["value"].to_numpy(dtype=float)
    order = np.lexsort((values, codes))
    codes, values = codes[order], values[order]
    starts = rows["start_unix_ns"].to_numpy(dtype=float)[order]
    groups = np.split(np.arange(len(codes)), np.flatnonzero(np.diff(codes)) + 1) \
        if len(codes) else []
    scenario = rows["scenario_id"].to_numpy()[order]
    table = pd.DataFrame({
        "scenario_id": [scenario[g[0]] for g in groups],
        "start": [starts[g].min() for g in groups],
        **{k: [values[g].mean() if q is None else np.percentile(values[g], q) for g in groups]
           for k, q in enumerate(qs)},
    })
    table = table.sort_values("start", kind="stable")
    table["position"] = np.arange(len(table))
    table["r"] = table.groupby("scenario_id", sort=False).cumcount()
    return table.set_index(["scenario_id", "r"])


@cache
def _all_signs(n: int) -> np.ndarray:
    return np.array(list(itertools.product((1.0, -1.0), repeat=n)))


def signed_rank_test(differences: np.ndarray, swaps: int = SWAPS, seed: int = SEED
                     ) -> tuple[float, float]:
    """(two-sided p of "no difference" under random signs, the direction the differences
    lean: +1, -1 or 0); p NaN below two differences."""
    d = np.asarray(differences, dtype=float)
    if len(d) < 2:
        return np.nan, 0.0
    scores = np.sign(d) * pd.Series(np.abs(d)).rank(method="average").to_numpy()
    scores[d == 0] = 0.0
    observed, lean = abs(scores.sum()), float(np.sign(scores.sum()))
    if len(d) <= EXACT_UP_TO:
        return float(np.mean(np.abs(_all_signs(len(d)) @ scores) >= observed - 1e-9)), lean
    rng = np.random.default_rng(seed)
    beyond = 0
    for start in range(0, swaps, 5000):
        signs = rng.choice((1.0, -1.0), size=(min(swaps, start + 5000) - start, len(d)))
        beyond += int((np.abs(signs @ scores) >= observed - 1e-9).sum())
    return (1 + beyond) / (swaps + 1), lean


def rank_sum_test(base: np.ndarray, other: np.ndarray, swaps: int = SWAPS, seed: int = SEED
                  ) -> tuple[float, float]:
    """(two-sided p that `other`'s values are no higher or lower than `base`'s, by rank sum
    over every split of the pooled values, the direction `other` leans); p NaN unless both
    sides have two values."""
    a, b = np.asarray(base, dtype=float), np.asarray(other, dtype=float)
    if len(a) < 2 or len(b) < 2:
        return np.nan, 0.0
    ranks = pd.Series(np.concatenate([a, b])).rank(method="average").to_numpy()
    centre = len(b) * (len(ranks) + 1) / 2
    observed = ranks[len(a):].sum() - centre
    if comb(len(ranks), len(b)) <= EXACT_SPLITS:
        sums = ranks[_all_splits(len(ranks), len(b))].sum(axis=1)
        p = float(np.mean(np.abs(sums - centre) >= abs(observed) - 1e-9))
    else:
        rng = np.random.default_rng(seed)
        beyond = 0
        for start in range(0, swaps, 2000):
            picks = rng.random((min(swaps, start + 2000) - start, len(ranks))).argsort(axis=1)
            sums = ranks[picks[:, :len(b)]].sum(axis=1)
            beyond += int((np.abs(sums - centre) >= abs(observed) - 1e-9).sum())
        p = (1 + beyond) / (swaps + 1)
    return p, float(np.sign(observed))


@cache
def _all_splits(n: int, k: int) -> np.ndarray:
    return np.array(list(itertools.combinations(range(n), k)), dtype=np.int64).reshape(-1, k)


def paired_wave_tests(base: pd.DataFrame, other: pd.DataFrame, qs: tuple[float | None, ...],
                      wave: int) -> list[tuple[float, float, int, float]]:
    """Per q in `qs` (None: the mean): (p, the direction other − base leans, trial pairs, p
    of the same run made EFFECT times slower). p is the larger of the paired trials' and the
    time blocks' (both must reject), and 1 when the difference does not stand clear of the
    run's own wander (`analysis.metrics.wander`); NaN when a test cannot be computed, 1 when
    the tests lean opposite ways. At concurrency 1 no trials ran together and the paired
    trials alone decide. The last p is of the other run's figures rescaled so they are EFFECT
    times the base's on average (log ratios; what the run could have called): NaN for figures
    that are not all positive (shares), which have no such scale."""
    b, o = _per_trial(base, qs), _per_trial(other, qs)
    common = b.index.intersection(o.index)
    size = max(1, int(wave))
    order = ((b.loc[common, "position"] + o.loc[common, "position"]) / 2).sort_values(
        kind="stable").index
    out = []
    for k in range(len(qs)):
        base_k, other_k = b[k].to_numpy(dtype=float), o[k].to_numpy(dtype=float)
        paired = (b.loc[order, k].to_numpy(dtype=float), o.loc[order, k].to_numpy(dtype=float))
        p, lean = _called(*paired, base_k, other_k, size)
        seen = np.nan
        if len(common) and (np.concatenate([base_k, other_k]) > 0).all():
            scale = EFFECT / np.exp(np.mean(np.log(paired[1] / paired[0])))
            seen, _ = _called(paired[0], paired[1] * scale, base_k, other_k * scale, size)
        out.append((p, lean, len(common), seen))
    return out


def _called(base: np.ndarray, other: np.ndarray, base_all: np.ndarray, other_all: np.ndarray,
            size: int) -> tuple[float, float]:
    """(p, lean) of the paired figures `base`/`other` (running order) and each run's own
    figures `base_all`/`other_all`: the trial test, the block test above concurrency 1, and
    the wander gate on the blocks' log ratios (differences when a figure is not positive)."""
    d = other - base
    p, lean = signed_rank_test(d)
    if size > 1:
        timed, timed_lean = _blocks_test(base_all, other_all, d, size)
        if np.isnan(p) or np.isnan(timed):
            p = np.nan
        else:
            p = max(p, timed) if lean == timed_lean else 1.0
    positive = len(d) and (base > 0).all() and (other > 0).all()
    relative = np.log(other / base) if positive else d
    if not np.isnan(p) and not clear_of_wander(block_means(relative, size)):
        p = 1.0
    return p, lean


def _blocks_test(base: np.ndarray, other: np.ndarray, paired: np.ndarray, size: int
                 ) -> tuple[float, float]:
    """The time-block test, chosen by the design alone (so choosing costs no level): with
    MIN_PAIRED_BLOCKS blocks or more, the paired differences summed per block of `size` in
    running order, by signed ranks (blocks at one point of both runs hold the same scenarios,
    so what the scenarios bring cancels); with fewer, too few sign patterns exist and each
    run's block means are compared by rank sum, unpaired."""
    n_blocks = -(-len(paired) // size)
    if n_blocks >= MIN_PAIRED_BLOCKS:
        return signed_rank_test(np.bincount(np.arange(len(paired)) // size, weights=paired))
    return rank_sum_test(*[pd.Series(side).groupby(np.arange(len(side)) // size).mean()
                           .to_numpy() for side in (base, other)])
