"""Whether two runs' paired figures differ when the server's speed may drift through each run.

The compare uses it for shares (error rate, tool-call integrity classes, `BATCHES` blocks or
more). Latency rows were judged by it on one pair of runs, and its figures below are of that
use, until a drift slower than a run was shown to defeat any rule on one pair (what nothing
inside either run shows cannot be told from a difference): latency is judged on whole runs
now (`analysis.metrics.between_runs`).

The paired figures (each trial's log ratio, other over base, averaged per block of the trials
that ran together, in running order) are a time series. A server whose speed drifts makes
neighbouring blocks lean together, so their mean varies far more than their scatter says and
a test counting blocks as independent calls identical runs different. Two parts hold that:

- **the long-run variance of the mean, by batch means**: the blocks are cut into `BATCHES`
  contiguous batches in time order; the batch means' spread estimates the variance of the
  overall mean *including* whatever correlation lives within a batch, and the mean over that
  standard error is referred to Student's t on `BATCHES - 1` degrees of freedom (exact when
  the batch means are independent and normal; approximately so when the drift forgets itself
  within a batch, i.e. its correlation time is short against `n / BATCHES` blocks). Each
  batch's mean is trimmed (`TRIM` of its blocks off each end): one very slow trial moves a
  batch mean far enough to hide a real difference behind it (a 1.5x slowdown with 5 % of
  trials 3-8x slower was called 0.63 of the time untrimmed, 0.87 trimmed, below); with
  identical runs a block's paired log ratio is as likely + as -, so a trimmed batch mean
  stays centred on 0 and the t reference keeps its level;
- **a drift check**: a drift slower than a batch leaves the batch means correlated and the t
  reference too lenient, but it also shows in the blocks. Two statistics of the blocks'
  *ranks* in the run look for it: von Neumann's ratio (mean squared step between neighbours
  over twice the variance: ~1 for independent blocks, small when they lean together;
  Bartels's test on ranks) and how far the running sum of the centred ranks strays (KPSS's
  statistic: large when the level shifts once, trends or wanders, which neighbours alone
  show weakly). Ranks, because both are sums of squares: on the blocks' values a few very
  slow requests (Pareto tails) make a few blocks' squares outweigh the rest, and a drift the
  rest of the run shows plainly went unseen (identical runs of a heavy-tailed server on a
  trend were called different in 0.12 of compares); a block's rank moves by at most the
  run's length. Each is ranked against its distribution over
  orders of the same blocks (`DRIFT_SHUFFLES` drawn; exact under exchangeable blocks,
  whatever their distribution), and the smaller of the two ranks against the same over the
  shuffles; at or below `DRIFT_ALPHA` the runs drift within themselves and the row says it
  cannot tell, never a verdict. A pair's latency columns are checked as one, every column's
  two statistics in the same minimum over one shuffle shared by all (a server's drift moves
  every latency, and the column that shows it most plainly speaks for the noisier ones,
  whose own check missed it while their batch means called it). The check's level is 10 %,
  not 5 %: a drift slower than the run shifts one run against the other by as much as a
  real slowdown, and only the check separates the two; the cost is that a steady pair says
  *cannot tell* about one time in ten.

A run shorter than `MIN_BLOCKS` blocks is too short to estimate its own drift: a drift of the
size and memory the compare is checked against (AR(1) 0.8-0.9 between blocks, sd 0.3 in log
per run) shifts a whole 14-block run by as much as a 1.5x slowdown while moving little within
it, so no rule on one pair of such runs holds its error rate and keeps any power (a test that
knew the drift exactly would see a 1.5x slowdown ~25 % of the time). Those rows say they
cannot tell; a verdict needs longer runs (more scenarios, or repeats, at a concurrency that
leaves at least `MIN_BLOCKS` blocks) or more runs per side. The bound is for latency, which the
compare was checked against drifting servers on; shares (error rate, integrity classes) were
not, and keep a verdict from `BATCHES` blocks, with the batch means and the drift check.

Error rate: with independent blocks the check rejects DRIFT_ALPHA of pairs and the t test
holds its level exactly (normal batch means) on the rest: at most the level. Under drift the
batch means and the drift check of one column were set on a plain Gaussian model (two
independent AR(1) drifts, sd 0.3, plus block noise sd 0.2, 10,000 draws per cell, at the Holm
level 0.05 / 7): at 42 blocks false calls per row 0.006 (AR 0.8), 0.016 (0.9), 0.041 (0.95),
0.14 (0.98: a drift as slow as the run), while a 1.5x slowdown on independent blocks is called
0.95 of the time; at 30 blocks (untrimmed) AR 0.95 reached 0.10, hence MIN_BLOCKS. The check
of every column at once, its second statistic, its 10 % and its ranks were set on the design
family of benchmarks/compare_small_n.py (drifting servers: AR(1), a step, a slow swing, a
random walk, a trend under heavy tails), which measures the compare on that family and,
apart, on servers held out from this choice.
"""

from __future__ import annotations

import math

import numpy as np

from analysis.metrics.student_t import t_two_sided

BATCHES = 6
TRIM = 0.2
MIN_BLOCKS = 40
DRIFT_ALPHA = 0.10
DRIFT_SHUFFLES = 2000
SEED = 0


def block_means(paired: np.ndarray, size: int) -> np.ndarray:
    """Paired values averaged per block of `size` in running order (the last block shorter)."""
    block = np.arange(len(paired)) // max(1, int(size))
    return np.bincount(block, weights=np.asarray(paired, dtype=float)) / np.bincount(block)


def _von_neumann(x: np.ndarray) -> np.ndarray:
    """Mean squared step over twice the variance, per row of `x` (NaN for a constant row)."""
    centred = x - x.mean(axis=-1, keepdims=True)
    spread = (centred ** 2).sum(axis=-1) / (x.shape[-1] - 1)
    steps = np.mean(np.diff(x, axis=-1) ** 2, axis=-1) / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(spread > 0, steps / spread, np.nan)


def _wander(x: np.ndarray) -> np.ndarray:
    """How far the running sum of the centred blocks strays, over what their spread would
    give (KPSS's statistic: large when the level shifts or wanders through the run)."""
    centred = x - x.mean(axis=-1, keepdims=True)
    spread = (centred ** 2).mean(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (np.cumsum(centred, axis=-1) ** 2).mean(axis=-1) / (x.shape[-1] * spread)


def _ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n of `x`, ties sharing their average rank."""
    _, where, counts = np.unique(x, return_inverse=True, return_counts=True)
    return (np.cumsum(counts) - (counts - 1) / 2)[where]


def drift_p(*series: np.ndarray, shuffles: int = DRIFT_SHUFFLES, seed: int = SEED) -> float:
    """One-sided p that blocks in running order drift (their ranks lean on their neighbours,
    or stray in level) no more than in a random order: NaN below three blocks, 1 when none
    varies.
    Several series of one pair of runs (its latency columns, block for block) are checked at
    once: each arrangement's smallest rank of any statistic of any series over every
    arrangement, against the same over one shuffle of the blocks shared by every series, so
    the check of all of them holds its level as one test of one, whatever their correlation
    (exact under exchangeable blocks)."""
    x = np.atleast_2d(np.asarray(series, dtype=float))
    if x.shape[-1] < 3:
        return np.nan
    x = x[np.ptp(x, axis=-1) > 0]
    if not len(x):
        return 1.0
    # On ranks: a shuffle of the blocks shuffles their ranks, so the test stays exact, and
    # one very slow block moves a rank by at most n - 1 where it moves a square without end.
    x = np.stack([_ranks(row) for row in x])
    rng = np.random.default_rng(seed)
    orders = np.argsort(rng.random((shuffles, x.shape[-1])), axis=1)
    # Arrangement 0 is the running order; the rest are shuffles. Both statistics are small
    # when the blocks drift: neighbours that lean together, a level that wanders away.
    arranged = np.concatenate([x[:, None, :], x[:, orders]], axis=1)
    statistics = np.concatenate([_von_neumann(arranged), -_wander(arranged)])
    ranks = np.stack([np.searchsorted(np.sort(r), r, side="right") for r in statistics])
    least = ranks.min(axis=0)
    return float(np.mean(least <= least[0] + 1e-12))


def _trimmed_mean(x: np.ndarray) -> float:
    cut = int(TRIM * len(x))
    return float(np.sort(x)[cut:len(x) - cut].mean())


def batch_means_test(blocks: np.ndarray, batches: int = BATCHES) -> tuple[float, float]:
    """(two-sided p that the blocks' centre is 0, by trimmed batch means and t on
    batches - 1 df, the direction it leans); NaN with fewer blocks than batches."""
    x = np.asarray(blocks, dtype=float)
    if len(x) < batches:
        return np.nan, 0.0
    means = np.array([_trimmed_mean(part) for part in np.array_split(x, batches)])
    error = float(means.std(ddof=1)) / math.sqrt(batches)
    centre = float(means.mean())
    if error == 0:
        return (1.0, 0.0) if centre == 0 else (0.0, float(np.sign(centre)))
    return t_two_sided(centre / error, batches - 1), float(np.sign(centre))


def long_run_test(blocks: np.ndarray, least: int = MIN_BLOCKS) -> tuple[float, float, str]:
    """(p, lean, why no verdict) for the blocks' mean being 0. Runs too short to estimate
    their own drift: NaN (fixed by the design, so the row is no test of the family). Runs
    that drift within themselves: p 1 — the data set the row aside, so it still counts in
    the family's correction, or the rows left would each be tested at a looser level.
    `least`: the bound on length (MIN_BLOCKS, set for latency; shares pass BATCHES)."""
    x = np.asarray(blocks, dtype=float)
    if len(x) < least:
        return np.nan, 0.0, f"too short (< {least} blocks) to estimate its own drift"
    if drift_p(x) <= DRIFT_ALPHA:
        return 1.0, 0.0, "its server drifted within a run"
    p, lean = batch_means_test(x)
    return p, lean, ""
