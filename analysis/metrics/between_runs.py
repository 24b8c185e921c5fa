"""Whether two configurations' latency differs, judged on whole runs of each.

A server's speed drifts: with load from other tenants, temperature, cache state, a neighbour's
job. A drift slower than one run shifts the whole run, so two runs of one server differ by as
much as a real slowdown, and nothing inside either run shows it (one pair of runs was called
different in up to 27 % of compares of identical servers: benchmarks/compare_small_n.py). The
only evidence of how far a run's figure moves from one run to the next is several runs of the
same configuration. So a latency row is judged on the runs themselves:

- each run gives one figure, the row's own (its pooled percentile over the run's requests at
  that level), taken in log: a slowdown is a ratio, and run-to-run noise of a latency scales
  with it;
- the two sides' log figures are compared by Welch's two-sample t: each side's own variance
  of its mean, Satterthwaite's degrees of freedom rounded down (the runs are the independent
  units, so whatever correlation lives inside a run, between its requests, trials or waves,
  is in each run's figure and counted once). Welch's, not Student's pooled t: run figures are
  not normal (a server whose speed swings or switches between a fast and a slow state gives
  bounded or few-valued run levels), and at the levels Holm asks of a row (0.05 / 7 and
  below) the pooled t was too lenient for them (0.038-0.039 of 1,500 compares of identical
  runs at 5 runs a side; Welch's 0.021-0.023). It also holds when one configuration's runs
  spread more than the other's. A verdict needs `MIN_RUNS` runs on each side: over 3 or 4
  some latency row of such servers was called different in ~0.05-0.06 of compares;
- the runs run in pairs, one of each side, each pair's order by a coin flip (A B B A A B ...,
  `in_pairs`), and the crossover's own test (`crossover_test`) must agree with Welch's. A
  server can treat a pair's second run apart from its first (a cache the first warmed, a
  compaction every other run, two replicas taken in turn): when the coin flips fall alike,
  one side gets every run of one kind, and Welch's t calls it (0.04-0.06 of compares of such
  identical runs). The crossover removes the place effect; it alone, with pairs - 2 degrees
  of freedom, is fooled by one outlying run and by two-state servers, which Welch's spread
  absorbs, so a row is called only when both call it (benchmarks/compare_small_n.py). Every
  pair in one order gives the crossover nothing to tell place from side: no verdict;
- runs back to back (A A A B B B) are not interleaved (`interleaved`): a drift slower than
  several runs would read as a difference between the sides; they get no verdict.

A single run that is much slower than its side's others (a bad node, a cache flush) inflates
that side's spread as much as it moves its mean, so it cannot by itself make a difference
through Welch's t: with one outlying run among n, whatever its size, the t statistic is 1
when the other runs agree, and about 1 when they scatter a little.
"""

from __future__ import annotations

import math

import numpy as np

from analysis.metrics.student_t import t_two_sided

# Runs a side needs for a latency verdict (above).
MIN_RUNS = 5
# The slowdown a latency verdict must be able to see: runs that would not call it say they
# cannot tell (analysis/compare.py), rather than "no clear difference".
EFFECT = 1.5
# The most the sides' mean running positions may differ (in runs) for their runs to count as
# interleaved: A B A B and A B B A pass, A A B B and A A A B B B do not.
MAX_ORDER_GAP = 1.0


def run_t_test(base: np.ndarray, other: np.ndarray) -> tuple[float, float, int]:
    """(two-sided p of "same mean log figure", the direction other - base leans (+1, -1, 0),
    Welch's degrees of freedom, rounded down) of two sides' run figures (all > 0). p NaN with
    fewer than two runs on a side, 1 when no run differs from its side's others and the sides
    agree."""
    b, o = np.log(np.asarray(base, dtype=float)), np.log(np.asarray(other, dtype=float))
    if len(b) < 2 or len(o) < 2:
        return np.nan, 0.0, 0
    diff = float(o.mean() - b.mean())
    p, df = _welch(diff, b, o)
    return p, float(np.sign(diff)), df


def effect_p(base: np.ndarray, other: np.ndarray, effect: float) -> float:
    """p of the same runs had the other side been `effect` times slower on average: what the
    runs' spread lets them call (NaN with fewer than two runs on a side)."""
    b, o = np.log(np.asarray(base, dtype=float)), np.log(np.asarray(other, dtype=float))
    if len(b) < 2 or len(o) < 2:
        return np.nan
    return _welch(math.log(effect), b, o)[0]


def _welch(diff: float, b: np.ndarray, o: np.ndarray) -> tuple[float, int]:
    """(p, degrees of freedom) of a difference `diff` of mean log figures by Welch's t."""
    vb, vo = b.var(ddof=1) / len(b), o.var(ddof=1) / len(o)
    if vb + vo == 0:
        df = len(b) + len(o) - 2
    else:
        df = (vb + vo) ** 2 / (vb ** 2 / (len(b) - 1) + vo ** 2 / (len(o) - 1))
        df = max(1, math.floor(df + 1e-9))  # rounded down: the conservative side
    return _t(diff, math.sqrt(vb + vo), df), df


def interleaved(base_starts: np.ndarray, other_starts: np.ndarray) -> bool | None:
    """Whether the two sides' runs alternated in time: their mean running positions (ranked
    over both sides' runs) differ by at most `MAX_ORDER_GAP`. None when the order is unknown
    (a start time missing, or every run starting at one moment)."""
    starts = np.concatenate([np.asarray(base_starts, float), np.asarray(other_starts, float)])
    if np.isnan(starts).any() or len(np.unique(starts)) < 2:
        return None
    ranks = np.argsort(np.argsort(starts, kind="stable"), kind="stable") + 1.0
    gap = abs(ranks[:len(base_starts)].mean() - ranks[len(base_starts):].mean())
    return bool(gap <= MAX_ORDER_GAP)


def in_pairs(base_starts: np.ndarray, other_starts: np.ndarray) -> np.ndarray | None:
    """The runs in running order, taken two by two: per pair, the index of its first and
    second run in (base..., other...) order. None unless every pair holds one run of each
    side (A B or B A, pair after pair) and every start is known and distinct."""
    starts = np.concatenate([np.asarray(base_starts, float), np.asarray(other_starts, float)])
    if np.isnan(starts).any() or len(np.unique(starts)) < len(starts) or len(starts) % 2:
        return None
    order = np.argsort(starts, kind="stable").reshape(-1, 2)
    is_other = order >= len(base_starts)
    return order if (is_other[:, 0] != is_other[:, 1]).all() else None


def crossover_test(figures: np.ndarray, pairs: np.ndarray, n_base: int
                   ) -> tuple[float, float]:
    """(two-sided p of "same mean log figure", the direction other - base leans) by the
    two-period crossover's own analysis. Per pair (`pairs` from `in_pairs`; `figures` the
    base runs' then the other side's), the first run's log figure minus the second's is the
    place effect (whatever the running order does to a pair's second run: a cache the first
    warmed, a compaction every other run, replicas taken in turn) plus the side difference when
    the other side ran first, minus it when the baseline did. So the side difference is half
    the gap between the two orders' mean differences, and its variance comes from the
    differences around their order's mean (pooled, pairs - 2 degrees of freedom). A pair's two
    runs ran next to each other, so a drift slower than a pair falls out of its difference.
    p NaN with every pair in the same order (place and side cannot be told apart) or fewer
    than 3 pairs."""
    diff, se, df = _crossover(figures, pairs, n_base)
    if np.isnan(diff):
        return np.nan, 0.0
    return _t(diff, se, df), float(np.sign(diff))


def crossover_effect_p(figures: np.ndarray, pairs: np.ndarray, n_base: int,
                       effect: float) -> float:
    """p of the same pairs had the other side been `effect` times slower on average (NaN
    where `crossover_test` has no p)."""
    diff, se, df = _crossover(figures, pairs, n_base)
    return np.nan if np.isnan(diff) else _t(math.log(effect), se, df)


def _crossover(figures: np.ndarray, pairs: np.ndarray, n_base: int
               ) -> tuple[float, float, int]:
    """(the side difference in mean log figure, its standard error, degrees of freedom)."""
    logs = np.log(np.asarray(figures, dtype=float))
    w = logs[pairs[:, 0]] - logs[pairs[:, 1]]
    other_first = pairs[:, 0] >= n_base
    k, n = int(other_first.sum()), len(w)
    if k in (0, n) or n < 3:
        return np.nan, np.nan, 0
    hi, lo = w[other_first], w[~other_first]
    spread = ((hi - hi.mean()) ** 2).sum() + ((lo - lo.mean()) ** 2).sum()
    se = math.sqrt(spread / (n - 2) * (1 / k + 1 / (n - k))) / 2
    return (hi.mean() - lo.mean()) / 2, se, n - 2


def _t(diff: float, se: float, df: int) -> float:
    """Two-sided p of `diff` with standard error `se` on Student's t; with no spread at all,
    1 when there is no difference and 0 when there is one."""
    if se == 0:
        return 1.0 if diff == 0 else 0.0
    return t_two_sided(diff / se, df)
