"""Whether two sides' request shares differ (the error rate, a tool-call integrity class),
tested on trials and on stretches of time. (Latency rows are judged on whole runs:
`analysis.metrics.between_runs`.)

Each side's figure is first taken within each trial (the share of its requests that failed,
or fell in the class). Two tests then ask "do the sides differ?", and a difference is called
only when both say so (p is the larger of the two: an intersection-union test, so whichever
of them is exact under the run's real noise holds the level):

- **trials, paired**: the r-th trial of a scenario on one side with the r-th on the other
  (start order); their difference's sign is a coin toss when the sides do not differ, so the
  signed ranks of the differences (Wilcoxon's statistic) are compared with every pattern of
  signs (all 2^n up to EXACT_UP_TO pairs, else SWAPS drawn). Exact when trials are
  independent: uneven request counts and repeats keep it so. Not when trials share the
  server's moments or its drift;
- **the long run**: the pairs' differences averaged per block of as many trials as ran
  together (the concurrency), in running order, tested by batch means on Student's t with a
  drift check (`analysis.metrics.longrun`): trials that ran together, and a server whose
  state drifts through a run, count as the few independent stretches they are. Runs too short
  to test, or that drift within themselves, get no p: the compare says it cannot tell.

Why per trial: a share over the two sides' pooled requests would count requests as
independent, and a trial's requests are not (one broken conversation fails throughout).
"""

from __future__ import annotations

import itertools
from functools import cache

import numpy as np
import pandas as pd

from analysis.metrics.longrun import BATCHES, block_means, long_run_test

EXACT_UP_TO = 16
SWAPS = 20_000
CHUNK = 1000
ENOUGH = 50  # patterns at least as extreme as the observed one: p is clearly not small
SEED = 0
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
    # Drawn in chunks, stopped once ENOUGH patterns reach the observed sum (Besag and
    # Clifford's sequential p, h / draws at the h-th: exact, and a clearly large p costs a
    # chunk, not every swap); otherwise (1 + beyond) / (swaps + 1) over all of them.
    rng = np.random.default_rng(seed)
    beyond, total = 0, scores.sum()
    for start in range(0, swaps, CHUNK):
        flips = rng.integers(0, 2, size=(min(swaps, start + CHUNK) - start, len(d)),
                             dtype=np.uint8)
        hits = np.cumsum(np.abs(total - 2 * (flips @ scores)) >= observed - 1e-9)
        if beyond + hits[-1] >= ENOUGH:
            return ENOUGH / (start + 1 + int(np.argmax(beyond + hits >= ENOUGH))), lean
        beyond += int(hits[-1])
    return (1 + beyond) / (swaps + 1), lean


def paired_request_tests(columns: list[tuple[pd.DataFrame, pd.DataFrame, tuple[float | None, ...]]],
                         wave: int) -> list[list[tuple[float, float, int, str]]]:
    """Per column (its base and other requests, its qs), per q in qs (None: the mean): (p,
    the direction other − base leans, trial pairs, why no p). p is the larger of the paired
    trials' and the time blocks' long-run test (both must reject; 1 when they lean opposite
    ways); NaN when the runs are too short to test, 1 when they drift within themselves, with
    the reason (`analysis.metrics.longrun`)."""
    size = max(1, int(wave))
    out = []
    for base, other, qs in columns:
        tests = []
        for base_k, other_k in _paired_figures(base, other, qs):
            p, lean, why = _called(base_k, other_k, size)
            tests.append((p, lean, len(base_k), why))
        out.append(tests)
    return out


def _paired_figures(base: pd.DataFrame, other: pd.DataFrame, qs: tuple[float | None, ...]
                    ) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per q, the paired trials' figures (base, other) in running order."""
    b, o = _per_trial(base, qs), _per_trial(other, qs)
    common = b.index.intersection(o.index)
    order = ((b.loc[common, "position"] + o.loc[common, "position"]) / 2).sort_values(
        kind="stable").index
    return [(b.loc[order, k].to_numpy(dtype=float), o.loc[order, k].to_numpy(dtype=float))
            for k in range(len(qs))]


def _called(base: np.ndarray, other: np.ndarray, size: int) -> tuple[float, float, str]:
    """(p, lean, why no p) of the paired figures `base`/`other` in running order: the
    long-run test of their blocks' differences and the trial test."""
    d = other - base
    timed, timed_lean, why = long_run_test(block_means(d, size), BATCHES)
    if why:  # no verdict whatever the trials say: spare their test
        return timed, 0.0, why
    p, lean = signed_rank_test(d)
    if np.isnan(timed) or np.isnan(p):
        return np.nan, 0.0, "too few trials to test"
    return (max(p, timed) if lean == timed_lean else 1.0), lean, ""
