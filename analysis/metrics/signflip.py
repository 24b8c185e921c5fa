"""A paired sign-flip test of two runs' request figures, trial by trial, in waves.

Pairing: the r-th trial of a scenario in one run (in start order) with the r-th trial of it in
the other. Each run's figure is taken within the trial (its requests' q-th percentile, or
their mean, e.g. the share that failed) and differenced: d = other − base.

Exchangeable unit: a **wave**. Trials that run at the same time share the server (one batch,
one queue), so their latencies move together; c trials run together at concurrency c. Units
are put in the order they ran (the mean of their two start positions) and cut into waves of c
consecutive units. Under "the two runs come from one distribution", which run a wave's trials
landed in is a coin toss, so each wave's sum of differences is as likely to have come out
negated: the test compares the waves' signed ranks (Wilcoxon's signed-rank statistic, so a few
very slow trials weigh like any other wave) with their sum under every pattern of signs over
the waves (all 2^w when w <= EXACT_UP_TO, else SWAPS drawn at random), and p is the share at
least as far from 0 (the observed pattern counted, so never 0). With too few waves no
pattern is rare enough, and nothing is called: the honest answer for a run too short to
hold a server's own swings.

Why within trials: a percentile of the two runs' pooled requests, swapped unit by unit, is
moved only by the units whose requests sit near that percentile, so a shift of every request
would read as nothing; a mean of per-trial differences weighs every trial the same and sees
it. The test assumes nothing about the shape of latencies (heavy tails, a few slow trials,
a different number of requests per trial keep it exact) and independence between waves: a
server whose speed drifts over many waves, or differs from run to run, is not held (repeat the
runs to see that).
"""

from __future__ import annotations

import itertools
from functools import cache

import numpy as np
import pandas as pd

EXACT_UP_TO = 16
SWAPS = 20_000
SEED = 0
# What a side of the test reads: one row per request.
COLUMNS = ("scenario_id", "trial", "start_unix_ns", "value")


def _per_trial(frame: pd.DataFrame, qs: tuple[float | None, ...]) -> pd.DataFrame:
    """One row per trial, indexed by its unit (scenario, r-th trial of it by start): its
    start position in the run, and its figure per q (columns 0..len(qs)-1)."""
    rows = frame[~np.isnan(frame["value"].to_numpy(dtype=float))]
    codes, names = pd.factorize(rows["trial"], sort=False)
    values = rows["value"].to_numpy(dtype=float)
    order = np.lexsort((values, codes))
    codes, values = codes[order], values[order]
    starts = rows["start_unix_ns"].to_numpy(dtype=float)[order]
    bounds = np.flatnonzero(np.diff(codes)) + 1
    groups = np.split(np.arange(len(codes)), bounds) if len(codes) else []
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


def wave_differences(base: pd.DataFrame, other: pd.DataFrame, qs: tuple[float | None, ...],
                     wave: int) -> tuple[np.ndarray, np.ndarray]:
    """(per paired trial x q: other's figure − base's, each trial's wave number), in running
    order."""
    b, o = _per_trial(base, qs), _per_trial(other, qs)
    common = b.index.intersection(o.index)
    if common.empty:
        return np.zeros((0, len(qs))), np.zeros(0, dtype=int)
    order = ((b.loc[common, "position"] + o.loc[common, "position"]) / 2).sort_values(
        kind="stable").index
    columns = list(range(len(qs)))
    d = (o.loc[order, columns] - b.loc[order, columns]).to_numpy(dtype=float)
    return d, np.arange(len(d)) // max(1, int(wave))


@cache
def _all_signs(n: int) -> np.ndarray:
    return np.array(list(itertools.product((1.0, -1.0), repeat=n)))


def signflip_test(differences: np.ndarray, waves: np.ndarray, swaps: int = SWAPS,
                  seed: int = SEED) -> tuple[float, float]:
    """(two-sided p of "no difference" under random signs per wave, the direction the waves
    lean: +1, -1 or 0) with the signed-rank statistic; p NaN below two waves."""
    d = np.asarray(differences, dtype=float)
    sums = np.bincount(np.asarray(waves, dtype=int), weights=d) if len(d) else d
    n_waves = len(sums)
    if n_waves < 2:
        return np.nan, 0.0
    # Signed ranks (Wilcoxon's): a wave's sign counts, its size only by rank, so a few very
    # slow trials weigh like any other wave; the sign patterns are the same test.
    scores = np.sign(sums) * pd.Series(np.abs(sums)).rank(method="average").to_numpy()
    scores[sums == 0] = 0.0
    observed, lean = abs(scores.sum()), float(np.sign(scores.sum()))
    if n_waves <= EXACT_UP_TO:
        return float(np.mean(np.abs(_all_signs(n_waves) @ scores) >= observed - 1e-9)), lean
    rng = np.random.default_rng(seed)
    beyond = 0
    for start in range(0, swaps, 5000):
        signs = rng.choice((1.0, -1.0), size=(min(swaps, start + 5000) - start, n_waves))
        beyond += int((np.abs(signs @ scores) >= observed - 1e-9).sum())
    return (1 + beyond) / (swaps + 1), lean


def paired_wave_tests(base: pd.DataFrame, other: pd.DataFrame, qs: tuple[float | None, ...],
                      wave: int) -> list[tuple[float, float, int]]:
    """Per q in `qs` (None: the mean): (p, the direction other − base leans, waves)."""
    d, waves = wave_differences(base, other, qs, wave)
    n_waves = int(waves.max()) + 1 if len(waves) else 0
    return [(*signflip_test(d[:, k], waves), n_waves) for k in range(len(qs))]
