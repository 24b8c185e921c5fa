"""Tool-call integrity per level, against the level's own baseline: at which load do tool calls
start breaking, and how?

Input: the requests table, whose classified agent replies carry one 0/1 column per integrity
class and `tc_any` (analysis/metrics/integrity.py defines them; the reading layer fills them).
Per (source, level) and class:

- `rate`: failing replies / classified replies, with a 95 % interval that is clustered by
  scenario: Wilson's score interval at an effective sample size n / deff, where deff (≥ 1) is
  the design effect of the scenario-clustered (ratio-estimator) variance over the binomial one.
  Replies of one scenario share a prompt and a trajectory, so they fail together more often
  than independent draws would. With no failure there is nothing to estimate the clustering
  from and deff is 1 (the interval is then the plain Wilson one, still open above 0).
- the paired test against the reference (the source's lowest level): per scenario run at both,
  the difference of its failure rates; an exact one-sided **sign test** on those differences
  (scenarios whose rate rose vs fell, ties left out: McNemar's test when each scenario has one
  reply per side). Scenarios are the unit, so a scenario's correlated replies count once.
- `worse`: the level's rate rose beyond noise: the test rejects under **Holm's step-down
  procedure over every (class, level) of the source** at `alpha` (default 5 %, family-wise),
  counting only the tests that could reject at all (at least `min_discordant` scenarios moved,
  2^-m ≤ alpha): a class that moved in no scenario is no hypothesis.

The error rates of this rule, over injected faults and hard cases (low rates, a baseline with
failures, faults in a few scenarios, bursts), are measured by benchmarks/tool_call_integrity.py,
which runs these same functions.
"""

from __future__ import annotations

import math
from functools import cache
from itertools import combinations

import numpy as np
import pandas as pd

from analysis.metrics.base import holm
from analysis.metrics.integrity import ANY_COLUMN, COLUMNS, summary_key

FAMILY_ALPHA = 0.05
Z95 = 1.959963984540054
BLOCKS = 8  # time blocks per level: an exact block test reaches p = 1/C(16, 8) = 7.8e-5
TABLE_COLUMNS = ["source", "level", "reference", "class", "n", "failures", "rate", "ci_low",
                 "ci_high", "deff", "scenarios", "up", "down", "p_scenarios", "p_time",
                 "p_value", "worse"]


def wilson(failures: float, n: float, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a share (n may be an effective, fractional size)."""
    if n <= 0:
        return math.nan, math.nan
    p = failures / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # At 0 or n failures the bound is exactly 0 or 1 (not a rounding error away from it).
    return (0.0 if failures <= 0 else max(0.0, centre - half),
            1.0 if failures >= n else min(1.0, centre + half))


def design_effect(failures: np.ndarray, counts: np.ndarray) -> float:
    """Variance of the pooled rate with scenarios as clusters (linearised ratio estimator)
    over the binomial variance; at least 1; 1 when either is zero or undefined. Scenarios
    with no reply are left out."""
    keep = counts > 0
    failures, counts = failures[keep], counts[keep]
    n, k = float(counts.sum()), len(counts)
    if k < 2 or n == 0:
        return 1.0
    p = float(failures.sum()) / n
    binomial = p * (1 - p) / n
    clustered = k / (k - 1) * float(((failures - p * counts) ** 2).sum()) / (n * n)
    return max(1.0, clustered / binomial) if binomial > 0 else 1.0


def sign_test(up: int, down: int) -> float:
    """One-sided exact p of at least `up` rises among `up + down` scenarios that moved, each
    rising with probability 1/2 under "no change"."""
    m = up + down
    if m == 0:
        return 1.0
    return float(sum(math.comb(m, i) for i in range(up, m + 1)) / 2 ** m)


@cache
def _splits(a: int, b: int) -> np.ndarray:
    """Every way to pick `a` of `a + b` blocks (rows, 0/1), the first row the observed one."""
    rows = [np.isin(np.arange(a + b), chosen) for chosen in combinations(range(a + b), a)]
    return np.array(rows, dtype=float)


def block_test(level_rates: np.ndarray, ref_rates: np.ndarray) -> float:
    """One-sided exact permutation p of "the level's time blocks fail no more than the
    reference's": the share of the C(a+b, a) relabellings of the blocks whose mean difference
    is at least the observed one. 1.0 with fewer than one block a side."""
    a, b = len(level_rates), len(ref_rates)
    if not a or not b:
        return 1.0
    values = np.concatenate([level_rates, ref_rates])
    picked = _splits(a, b) @ values
    stat = picked / a - (values.sum() - picked) / b
    return float(np.mean(stat >= stat[0] - 1e-12))


def _blocks(frame: pd.DataFrame, li: np.ndarray, n_levels: int, values: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray] | None:
    """(failures, replies) per (level, time block, class): each level's classified replies in
    start order, cut into BLOCKS runs of equal size; None without start times."""
    if "start_unix_ns" not in frame or frame["start_unix_ns"].isna().any():
        return None
    starts = frame["start_unix_ns"].to_numpy(dtype=float)
    block = np.zeros(len(frame), dtype=np.int64)
    for lv in range(n_levels):
        rows = np.flatnonzero(li == lv)
        order = rows[np.argsort(starts[rows], kind="stable")]
        block[order] = np.arange(len(order)) * min(BLOCKS, len(order)) // max(len(order), 1)
    return _cell_sums(li * BLOCKS + block, n_levels * BLOCKS, values, (n_levels, BLOCKS))


def _cell_sums(cell: np.ndarray, n_cells: int, values: np.ndarray, shape: tuple[int, int]
               ) -> tuple[np.ndarray, np.ndarray]:
    """(failures, classified replies) per cell and class, reshaped to shape + (class,)."""
    known = ~np.isnan(values)
    fails = np.stack([np.bincount(cell, weights=np.where(known[:, c], values[:, c], 0.0),
                                  minlength=n_cells) for c in range(values.shape[1])], axis=1)
    counts = np.stack([np.bincount(cell, weights=known[:, c], minlength=n_cells)
                       for c in range(values.shape[1])], axis=1)
    return fails.reshape(*shape, -1), counts.reshape(*shape, -1)


def level_table(requests: pd.DataFrame, alpha: float = FAMILY_ALPHA) -> pd.DataFrame:
    """One row per (source, level, class) with classified replies (TABLE_COLUMNS); `class` is
    the class's column (`tc_any` for any class). Empty when nothing was classified."""
    if ANY_COLUMN not in requests or not requests[ANY_COLUMN].notna().any():
        return pd.DataFrame(columns=TABLE_COLUMNS)
    judged = requests[requests[ANY_COLUMN].notna()]
    rows: list[dict[str, object]] = []
    for source, frame in judged.groupby("source", sort=False):
        rows += _source_rows(str(source), frame, alpha)
    return _family(pd.DataFrame(rows, columns=TABLE_COLUMNS), alpha)


def _source_rows(source: str, frame: pd.DataFrame, alpha: float) -> list[dict[str, object]]:
    """Every (level, class) of one source, computed on (level, scenario, class) arrays of
    failures and classified replies."""
    levels = np.sort(frame["level"].unique())
    li = np.searchsorted(levels, frame["level"].to_numpy())
    si, _ = pd.factorize(frame["scenario_id"])
    values = frame[list(COLUMNS)].to_numpy(dtype=float)
    n_scen = int(si.max()) + 1
    fails, counts = _cell_sums(li * n_scen + si, len(levels) * n_scen, values,
                               (len(levels), n_scen))
    n, total = counts.sum(axis=1), fails.sum(axis=1)  # (level, class)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate_s = np.where(counts > 0, fails / counts, np.nan)  # per scenario
        diff = rate_s - rate_s[0]  # against the reference (the lowest level)
    up, down = (diff > 0).sum(axis=1), (diff < 0).sum(axis=1)
    paired = (~np.isnan(diff)).sum(axis=1)
    blocks = _blocks(frame, li, len(levels), values)
    rows = []
    for lv in range(len(levels)):
        for c, column in enumerate(COLUMNS):
            if not n[lv, c]:
                continue
            deff = design_effect(fails[lv, :, c], counts[lv, :, c])
            low, high = wilson(total[lv, c] / deff, n[lv, c] / deff)
            tested = lv > 0
            p_scen = sign_test(int(up[lv, c]), int(down[lv, c])) if tested else math.nan
            # The time test matters only where the scenario test could reject.
            p_time = _time_p(blocks, lv, c) if tested and p_scen <= alpha else math.nan
            rows.append({
                "source": source, "level": int(levels[lv]), "reference": f"c{levels[0]}",
                "class": column, "n": n[lv, c], "failures": total[lv, c],
                "rate": total[lv, c] / n[lv, c], "ci_low": low, "ci_high": high, "deff": deff,
                "scenarios": int(paired[lv, c]) if tested else 0,
                "up": int(up[lv, c]) if tested else 0, "down": int(down[lv, c]) if tested else 0,
                "p_scenarios": p_scen, "p_time": p_time,
                "p_value": p_scen if math.isnan(p_time) else max(p_scen, p_time),
                "worse": False})
    return rows


def _time_p(blocks: tuple[np.ndarray, np.ndarray] | None, lv: int, c: int) -> float:
    """The block test of class `c` at level index `lv` against the reference (index 0);
    0.0 (no constraint) without start times."""
    if blocks is None:
        return 0.0
    fails, counts = blocks
    mine, ref = counts[lv, :, c] > 0, counts[0, :, c] > 0
    return block_test(fails[lv, mine, c] / counts[lv, mine, c],
                      fails[0, ref, c] / counts[0, ref, c])


def _family(table: pd.DataFrame, alpha: float) -> pd.DataFrame:
    """Holm within each source over the tests that could reject alone (2^-moved ≤ alpha)."""
    table["worse"] = False
    min_moved = math.ceil(math.log2(1 / alpha))
    for _, frame in table.groupby("source", sort=False):
        testable = frame[frame["p_value"].notna() & (frame["up"] + frame["down"] >= min_moved)]
        if testable.empty:
            continue
        rejected = holm(testable["p_value"].astype(float).tolist(), alpha)
        table.loc[testable.index[rejected], "worse"] = True
    return table


def worse_levels(table: pd.DataFrame) -> dict[tuple[str, int], list[str]]:
    """(source, level) -> the classes (summary names) worse than the reference beyond noise."""
    out: dict[tuple[str, int], list[str]] = {}
    worse = table[table["worse"].astype(bool)]
    for source, level, column in zip(worse["source"], worse["level"], worse["class"],
                                     strict=True):
        out.setdefault((source, int(level)), []).append(summary_key(column))
    return out
