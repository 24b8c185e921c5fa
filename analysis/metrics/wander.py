"""How far a run's server wandered, beside the difference a compare would call.

One pair of runs cannot tell a server that is slower from one whose speed wandered,
independently in each run: a wander that changes slowly moves a whole run's mean, and no test
inside the two runs sees that part. What the runs do show is the part of the wander that moves
*within* a run: the paired figures in running order (each trial's log ratio, other over base,
averaged per block of the trials that ran together) drift up and down together instead of
scattering around their mean. `wander` measures it with von Neumann's successive differences:
the spread of the blocks beyond what their neighbour-to-neighbour steps show — about 0 when
blocks are independent (whatever their noise), the sd of the slow part when they lean together.

Under a slow wander the invisible part (the shift of a whole run) is of the order of the visible
one, so a difference is called only when the blocks' mean is at least `WANDER_FACTOR` times the
visible wander (`clear_of_wander`). The factor was set on a plain Gaussian model of the blocks'
log ratios (an AR(1) wander of correlation 0.8 or 0.9 and sd 0.42 plus block noise of sd
0.1-0.2, 10-14 blocks), not on the family benchmarks/compare_small_n.py reports the rule's rates
over: there, 3 held the drifting model near 0.1 false calls and 4 near 0.07, at a loss of
detection of a 1.5x slowdown from 0.93 to 0.83 at 14 trials; no factor that keeps detection
brings a drift of 0.9 under 0.1. It holds the rate down, not to 0 — a wander that shifts a run
with little movement inside it is not seen by any rule on one pair of runs (repeat the runs).
"""

from __future__ import annotations

import numpy as np

WANDER_FACTOR = 4.0
# Fewer blocks than this show no wander worth the name: the gate stays open.
MIN_BLOCKS = 3


def wander(blocks: np.ndarray) -> float:
    """The sd of the slow part of `blocks` (in running order): their variance beyond half the
    mean squared step between neighbours, 0 when none; NaN below MIN_BLOCKS."""
    x = np.asarray(blocks, dtype=float)
    if len(x) < MIN_BLOCKS:
        return np.nan
    steps = float(np.mean(np.diff(x) ** 2)) / 2
    return float(np.sqrt(max(0.0, float(np.var(x, ddof=1)) - steps)))


def clear_of_wander(blocks: np.ndarray, factor: float = WANDER_FACTOR) -> bool:
    """Whether the blocks' mean stands `factor` times clear of their visible wander (True when
    too few blocks to see one)."""
    w = wander(blocks)
    return bool(np.isnan(w) or abs(float(np.mean(blocks))) >= factor * w)


def block_means(paired: np.ndarray, size: int) -> np.ndarray:
    """Paired values averaged per block of `size` in running order (the last block shorter)."""
    block = np.arange(len(paired)) // max(1, int(size))
    return np.bincount(block, weights=np.asarray(paired, dtype=float)) / np.bincount(block)
