"""What a paired comparison of per-scenario figures could have seen: its power against a
difference of a given size, and the smallest difference it detects most of the time.

Simulated, as `bankbench capacity --plan` simulates a search, through the code that makes the
call (`paired_cluster_bootstrap_diff_ci` and the caller's own verdict rule), on synthetic pairs
built from the observed one:

- noise: the observed per-scenario differences, centred on 0 and drawn with replacement (the
  pair's own scenario-to-scenario spread, whatever its shape);
- a true difference of size `delta`, carried unevenly as real changes are: each scenario
  carries delta x w, w drawn with mean 1 and spread SPREAD (a gamma law); a uniform shift
  would be seen sooner, a change confined to a few scenarios later (a pair with no spread of
  its own, two deterministic runs, sees any difference its scenarios share);
- detected: the rule calls it in the right direction at the level a lone true difference must
  pass in its family (e.g. Holm's first step, 0.05 / m).

The same draws serve every size on the grid (common random numbers), so power rises with the
size as it should; the smallest detected size is interpolated on the grid.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from analysis.metrics.base import paired_cluster_bootstrap_diff_cis

DETECT = 0.80  # "detects": called at least this often
SIMS = 100
RESAMPLES = 400  # per simulated pair (the report's own call uses more): noise, not bias
SPREAD = 0.5  # of each scenario's share of a difference around 1
GRID = (0.025, 0.05, 0.1, 0.2, 0.4, 0.8)
# (low, high, p) of other − base → called in the direction of a positive difference?
Rule = Callable[[float, float, float], bool]


def power_curve(differences: np.ndarray, rule: Rule, sizes: tuple[float, ...] = GRID,
                sims: int = SIMS, seed: int = 0) -> np.ndarray:
    """Per size: the share of simulated pairs, that far apart (positive), that `rule` calls."""
    d = np.asarray(differences, dtype=float)
    d = d[~np.isnan(d)]
    n = len(d)
    if n < 2:
        return np.zeros(len(sizes))
    centred = d - d.mean()
    ids, zeros = np.arange(n), np.zeros(n)
    rng = np.random.default_rng(seed)
    called = np.zeros(len(sizes))
    for sim in range(sims):
        noise = centred[rng.integers(0, n, n)]
        share = rng.gamma(1 / SPREAD ** 2, SPREAD ** 2, n)
        # Every size in one call: each is what its own call would find (the same draws).
        found = paired_cluster_bootstrap_diff_cis(
            zeros, ids, [noise + size * share for size in sizes], ids, resamples=RESAMPLES,
            seed=sim)
        for k, (_, low, high, _, p) in enumerate(found):
            called[k] += rule(low, high, p)
    return called / sims


def detectable(sizes: tuple[float, ...], curve: np.ndarray) -> float:
    """The smallest size whose power reaches DETECT, interpolated on the grid; NaN when even
    the largest does not."""
    reached = np.flatnonzero(np.asarray(curve) >= DETECT)
    if not len(reached):
        return np.nan
    k = int(reached[0])
    if k == 0:
        return float(sizes[0])
    (a, b), (pa, pb) = sizes[k - 1:k + 1], curve[k - 1:k + 1]
    return float(a + (DETECT - pa) / (pb - pa) * (b - a))
