"""Configurations side by side: each other source against the first, level by level.

Figures are compared *paired by scenario*: the difference is taken over the scenarios both
runs have, and its 95% interval comes from a bootstrap that draws one set of scenarios for
both runs at once. Quality is averaged per scenario first, then differenced
(`paired_cluster_bootstrap_diff_ci` on one mean per scenario): every scenario weighs the same
in both runs, so trials lost to infra failures in one run cannot shift the weights and pass
for a quality difference. Per-request latency percentiles and the error rate are shown over
the requests of the drawn scenarios (`paired_cluster_bootstrap_quantile_diff_ci`); those
intervals are *within-run*: they resample the scenarios of these runs and hold no run-to-run
variation of the server.

A side may be several runs of one configuration (`sides`): its figure is their mean, its
trials and requests theirs together. A latency row is judged on the runs: each run's figure,
in log, by Welch's t over the runs of both sides and the crossover's test over the pairs
they ran in (one run of each side, each pair's order by a coin flip), both to call it
(`analysis.metrics.between_runs`), because a server whose speed drifts slower than a run
moves a whole run as a real difference would, and only other runs of the same configuration
show how far that goes (one pair of runs of an identical server was called different in up
to 27 % of compares, benchmarks/compare_small_n.py). So a latency row with fewer than 5 runs
on a side (`MIN_RUNS`: over fewer, a t test is too easily fooled by run figures that are not
normal), with each side's runs back to back rather than interleaved, not in pairs, or every
pair in one order, says it cannot tell.

A compare prints many verdicts (metrics × levels × sides), so they are one family: a row is
called better or worse only when its test rejects "no difference" under Holm's step-down
procedure over every test of the table at 5 % (and a quality row's interval excludes 0);
otherwise "no clear difference". Each test is counted once: a quality row whose paired values
are another's (TSQ and TSQ infra-as-0 when no trial was lost) shares that row's test
(`tested_with`). Quality's p comes from the bootstrap standard error (`bootstrap_p`); a
share's (error rate, integrity classes) from tests on each trial's own figure that hold trials
of one scenario, and trials that shared the server at one moment, together
(`analysis.metrics.signflip`). A latency row that calls nothing on runs that would not have
called a 1.5x slowdown either says "cannot tell", rather than "no clear difference"; its
interval, of the pooled percentile, shows its scale. Beside each quality verdict stand the
smallest difference the pair could have detected and "underpowered" where a 10-point one would
be missed more than 20 % of the time (`analysis.metrics.power`, simulated through this rule).
Figures with no interval (pooled ITL gaps, throughput and concurrency over a run's window,
token shares) show the delta and are not called.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache

import numpy as np
import pandas as pd

from analysis.metrics import BY_KEY
from analysis.metrics.base import (
    holm,
    paired_cluster_bootstrap_diff_ci,
    paired_cluster_bootstrap_quantile_diff_ci,
)
from analysis.metrics.between_runs import (
    EFFECT,
    MIN_RUNS,
    crossover_effect_p,
    crossover_test,
    effect_p,
    in_pairs,
    interleaved,
    run_t_test,
)
from analysis.metrics.integrity import COLUMNS as INTEGRITY_COLUMNS
from analysis.metrics.integrity import summary_key
from analysis.metrics.power import DETECT, GRID, detectable, power_curve
from analysis.metrics.quality import PAIRED_KEYS, view, with_solved
from analysis.metrics.signflip import paired_request_tests
from analysis.metrics.throughput import failed_and_counted

COMPARE_KEYS = (
    "ttft_ms_p50", "ttft_ms_p99", "itl_ms_p50", "itl_ms_p99", "tpot_ms_p50", "e2e_ms_p50",
    "e2e_ms_p99", "output_tps_per_user_p50", "output_token_throughput", "request_throughput",
    "achieved_concurrency", "error_rate", "goodput_request_share", "tsq_mean",
    "tsq_infra0_mean", "solved_mean", "solved_infra0_mean", "param_validity_mean",
    "extra_token_share", "cached_token_share",
    *(summary_key(c) for c in INTEGRITY_COLUMNS),
)
# Tool-call integrity: the share of classified replies per class, paired like the error rate;
# a class neither run shows (both 0, or neither classified a reply) gets no row.
INTEGRITY_KEYS = {summary_key(c): c for c in INTEGRITY_COLUMNS}
COLUMNS = ["level", "metric", "unit", "baseline", "source", "value", "delta", "delta_pct",
           "delta_ci_low", "delta_ci_high", "n_paired", "interval", "p_value", "holm_reject",
           "verdict", "better", "tested_with", "detectable", "power_at", "power_note", "runs"]
POWER_AT = 0.10  # the difference a quality verdict should see: 10 points of TSQ
FAMILY_ALPHA = 0.05  # Holm, over every verdict-bearing row of one compare table
QUALITY_INTERVAL = "per-scenario means, scenario bootstrap"
REQUEST_INTERVAL = "within-run scenario bootstrap"
BETTER, WORSE, UNCLEAR = "better", "worse", "no clear difference"
# A latency row that did not call a difference on runs that would not have called one of
# EFFECT either, or that has no test (fewer than MIN_RUNS runs on a side, runs not
# interleaved or not in pairs, every pair in one order, their order unknown), or a share row
# whose runs are too short to test or drift within themselves (analysis.metrics.longrun).
CANNOT_TELL = "cannot tell"
# Fewer paired scenarios than this: the delta and interval are shown, no verdict is called.
# Under the null the rule above calls a difference 16-40 % of the time from 2-5 scenarios,
# 9-10 % from 10, 4-8 % from 20 (benchmarks/compare_small_n.py, 400 simulations per cell).
MIN_PAIRED_SCENARIOS = 10
TOO_FEW = f"cannot tell (< {MIN_PAIRED_SCENARIOS} scenarios)"
# Summary column → (request column over successful requests, percentile) compared by a paired
# scenario bootstrap of that percentile; None: a share, the mean of a 0/1 column (error_rate:
# `failed` over all requests; an integrity class: over the classified replies).
REQUEST_KEYS: dict[str, tuple[str, float | None]] = {
    "ttft_ms_p50": ("ttft_ms", 50), "ttft_ms_p99": ("ttft_ms", 99),
    "e2e_ms_p50": ("e2e_ms", 50), "e2e_ms_p99": ("e2e_ms", 99), "tpot_ms_p50": ("tpot_ms", 50),
    "output_tps_per_user_p50": ("output_tps_per_user", 50), "error_rate": ("failed", None),
    **{key: (column, None) for key, column in INTEGRITY_KEYS.items()},
}
# A percentile resample costs a pass over every request of both runs: fewer resamples than
# for means keeps a 100k-request comparison to seconds; the interval ends move by < 1 %.
QUANTILE_RESAMPLES = 1000
NO_PAIRED_TRIALS = "no paired trials"
# Why a latency row has no verdict (analysis.metrics.between_runs).
ONE_RUN = ("one run on a side: a drift of the server slower than a run moves a whole run as a "
           f"real difference would; give each side {MIN_RUNS} or more runs, run in pairs "
           "(one of each side, each pair's order by a coin flip; a1,...,a5 --compare b1,...,b5)")
FEW_RUNS = (f"fewer than {MIN_RUNS} runs on a side: the t test over so few runs calls "
            "differences that are not there too often on servers whose run figures are not "
            "normal")
BACK_TO_BACK = ("each side's runs ran back to back: a drift across runs reads as a difference; "
                "interleave them (A B B A ...)")
UNKNOWN_ORDER = "the runs' order in time is unknown (no request start times)"
NOT_PAIRED = ("the runs did not run in pairs of one run of each side (A B or B A, pair after "
              "pair), which the test over pairs needs")
SAME_ORDER = ("every pair of runs ran in the same order: a run's place in its pair (a cache the "
              "run before warmed, a compaction every other run, replicas taken in turn) cannot "
              "be told from its side; choose each pair's order by a coin flip")


def metric_of(column: str):
    """The definition behind a summary column (`ttft_ms_p99` → TTFT, `tsq_mean` → TSQ)."""
    if column in BY_KEY:
        return BY_KEY[column]
    base = column.rsplit("_", 1)[0]
    return BY_KEY.get(base)


def _pairs(summary: pd.DataFrame, baseline: list[str], other: list[str]
           ) -> list[tuple[int, int, str]]:
    """(baseline level, other level, label) for two sides (each its runs): the levels every
    run has; two sides of single jobs pair up directly, whatever their levels."""
    base_levels, other_levels = _levels(summary, baseline), _levels(summary, other)
    if len(base_levels) == 1 and len(other_levels) == 1:
        a, b = base_levels[0], other_levels[0]
        return [(a, b, f"c{a}" if a == b else f"c{a} vs c{b}")]
    return [(lv, lv, f"c{lv}") for lv in base_levels if lv in other_levels]


def _levels(summary: pd.DataFrame, runs: list[str]) -> list[int]:
    """The levels every run of a side has."""
    found = [set(summary.loc[summary["source"] == run, "level"]) for run in runs]
    return sorted(set.intersection(*found))


def verdict(low: float, high: float, larger_is_better: bool | None) -> tuple[str, bool | None]:
    """(verdict text, better?) from a paired interval of other − baseline."""
    if larger_is_better is None or np.isnan(low) or np.isnan(high):
        return ("" if larger_is_better is None else UNCLEAR), None
    if low > 0 or high < 0:
        better = (low > 0) == larger_is_better
        return (BETTER if better else WORSE), better
    return UNCLEAR, None


def compare_table(summary: pd.DataFrame, trials: pd.DataFrame | None = None,
                  requests: pd.DataFrame | None = None,
                  keys: tuple[str, ...] = COMPARE_KEYS, power: bool = True,
                  sides: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Long table, one row per (level pair, metric, other side); see `COLUMNS`.

    A side is one configuration: by default each source (run) is its own; `sides` maps
    each source to its side's name, so several runs of one configuration form one side (the
    first source's side is the baseline). A side's figure is the mean of its runs'; its trials
    and requests are its runs' together. With `trials` and `requests` (the tables behind
    `summary`), quality and request keys get a paired interval and a verdict; without, or for
    other keys, the verdict stays empty. Latency rows are judged on the runs
    (`analysis.metrics.between_runs`): with fewer than `MIN_RUNS` on a side, runs not
    interleaved, not in pairs, or every pair in one order, they say they cannot tell. A
    quality row whose paired values are another row's (TSQ and TSQ infra-as-0 when nothing
    was lost) is tested once, with that row (`tested_with`). With `power`, each quality
    verdict gets the smallest difference the pair could have detected and its power at
    `POWER_AT` (`analysis.metrics.power`)."""
    runs_of: dict[str, list[str]] = {}
    for run in dict.fromkeys(summary["source"]):
        runs_of.setdefault((sides or {}).get(run, run), []).append(run)
    names = list(runs_of)
    if len(names) < 2:
        return pd.DataFrame(columns=COLUMNS)
    baseline, rows = names[0], []
    spreads: dict[int, np.ndarray] = {}  # row → per-scenario differences (quality rows)
    seen: dict[int, tuple[float, str]] = {}  # row → (p of the pair made EFFECT times slower,
    # why it has no p)
    indexed = summary.set_index(["source", "level"])
    by_column = _request_columns(keys)

    # A side (name, level) is read once: the baseline's serves every other side, and a
    # side's rows every key that reads them.
    @cache
    def per_run(side: tuple[str, int], key: str) -> np.ndarray:
        """The side's runs' own figures of `key` at its level (a latency row's test reads
        them; the side's figure is their mean)."""
        name, level = side
        return np.array([float(indexed.loc[(run, level)][key]) for run in runs_of[name]])

    @cache
    def solved(side: tuple[str, int]) -> pd.DataFrame:
        return with_solved(_rows(trials, side, runs_of))[0]

    @cache
    def viewed(side: tuple[str, int], which: str) -> pd.DataFrame:
        return view(solved(side), which)  # infra excluded, or as 0

    @cache
    def means(side: tuple[str, int], key: str) -> pd.Series:
        column, which = PAIRED_KEYS[key]
        return _scenario_means(viewed(side, which), column)

    @cache
    def columns(side: tuple[str, int]) -> dict[str, pd.DataFrame]:
        measured = _measured(_rows(requests, side, runs_of))
        return {column: _request_side(measured, column) for column in by_column}

    @cache
    def started(run: str, level: int) -> float:
        return _start(requests, (run, level))

    def by_runs(sides_: tuple[tuple[str, int], ...], key: str) -> tuple[float, float, float, str]:
        """(p, lean, p had other been EFFECT times slower, why no p) of a latency key, over
        the two sides' runs."""
        (b, b_level), (o, o_level) = sides_
        fewest = min(len(runs_of[b]), len(runs_of[o]))
        if fewest < MIN_RUNS:
            return np.nan, 0.0, np.nan, ONE_RUN if fewest == 1 else FEW_RUNS
        starts = [np.array([started(run, level) for run in runs_of[name]])
                  for name, level in sides_]
        order = interleaved(*starts)
        if order is None:
            return np.nan, 0.0, np.nan, UNKNOWN_ORDER
        if not order:
            return np.nan, 0.0, np.nan, BACK_TO_BACK
        pairs = in_pairs(*starts)
        if pairs is None:
            return np.nan, 0.0, np.nan, NOT_PAIRED
        base, other = (per_run(side, key) for side in sides_)
        if not ((base > 0).all() and (other > 0).all()):
            return np.nan, 0.0, np.nan, "a run has no such figure"
        figures = np.concatenate([base, other])
        crossed, crossed_lean = crossover_test(figures, pairs, len(base))
        if np.isnan(crossed):
            return np.nan, 0.0, np.nan, SAME_ORDER
        # Both tests must call it, the same way (an intersection-union test: its false rate
        # is at most either's): Welch's over the runs, and the crossover's over the pairs.
        p, lean, _ = run_t_test(base, other)
        p = max(p, crossed) if lean == crossed_lean else 1.0
        slower = max(effect_p(base, other, EFFECT),
                     crossover_effect_p(figures, pairs, len(base), EFFECT))
        return p, lean, slower, ""

    for other in names[1:]:
        runs = f"{len(runs_of[baseline])} vs {len(runs_of[other])}"
        for base_level, other_level, label in _pairs(summary, runs_of[baseline],
                                                     runs_of[other]):
            pair = ((baseline, base_level), (other, other_level))
            per_request = (_paired_requests(*(columns(side) for side in pair), by_column,
                                            max(base_level, other_level),
                                            lambda key, pair=pair: by_runs(pair, key))
                           if requests is not None else {})
            tested: dict[bytes, str] = {}  # paired values → the metric that tested them
            for key in keys:
                if key not in indexed.columns:
                    continue
                a, b = (float(np.mean(per_run(side, key))) for side in pair)
                if key in INTEGRITY_KEYS and not (a > 0 or b > 0):
                    continue
                metric = metric_of(key)
                row = {"level": label, "metric": key, "unit": metric.unit if metric else "",
                       "baseline": a, "source": other, "value": b, "delta": b - a,
                       "delta_ci_low": np.nan, "delta_ci_high": np.nan, "n_paired": np.nan,
                       "interval": "", "p_value": np.nan, "holm_reject": False,
                       "verdict": "", "better": None, "tested_with": "",
                       "detectable": np.nan, "power_at": np.nan, "power_note": "",
                       "runs": runs}
                direction = metric.larger_is_better if metric else None
                if trials is not None and key in PAIRED_KEYS:
                    result, paired = _paired(*(means(side, key) for side in pair))
                    row |= _row(*result, direction) | {"interval": QUALITY_INTERVAL}
                    fingerprint = paired.to_numpy().tobytes() + str(list(paired.index)).encode()
                    if fingerprint in tested:
                        row["tested_with"] = tested[fingerprint]
                    elif row["verdict"]:
                        tested[fingerprint] = key
                        spreads[len(rows)] = (paired["other"] - paired["base"]).to_numpy()
                elif key in per_request:
                    result, lean, seen_p, why = per_request[key]
                    row |= _row(*result, direction, lean=lean) | {"interval": REQUEST_INTERVAL}
                    if row["verdict"] in (BETTER, WORSE, UNCLEAR):
                        seen[len(rows)] = (seen_p, why)
                delta = row["delta"]
                row["delta_pct"] = delta / abs(a) * 100 if a and not np.isnan(a) else np.nan
                rows.append(row)
    table = _cannot_tell(_family(pd.DataFrame(rows, columns=COLUMNS)), seen)
    return _with_power(table, spreads) if power else table


def _first_of(table: pd.DataFrame, index: int) -> int:
    """The row a `tested_with` row shares its test with."""
    return table[(table["level"] == table.at[index, "level"])
                 & (table["source"] == table.at[index, "source"])
                 & (table["metric"] == table.at[index, "tested_with"])].index[0]


def _family(table: pd.DataFrame) -> pd.DataFrame:
    """Holm over the rows that carry a verdict, each test once; a called difference must
    survive it. A row tested with another (`tested_with`) takes that row's outcome."""
    twins = table["tested_with"] != ""
    judged = table["verdict"].isin([BETTER, WORSE, UNCLEAR]) & ~twins
    rejected = pd.Series(holm(table.loc[judged, "p_value"].astype(float).tolist(),
                              FAMILY_ALPHA), index=table.index[judged], dtype=bool)
    table["holm_reject"] = rejected.reindex(table.index, fill_value=False).astype(bool)
    lost = table["verdict"].isin([BETTER, WORSE]) & ~table["holm_reject"] & ~twins
    table.loc[lost, "verdict"] = UNCLEAR
    table["better"] = table["better"].astype(object)  # all-called tables read as bool
    table.loc[lost, "better"] = None
    for index in table.index[twins]:
        first = _first_of(table, index)
        for column in ("holm_reject", "verdict", "better"):
            table.at[index, column] = table.at[first, column]
    return table


def _cannot_tell(table: pd.DataFrame, seen: dict[int, tuple[float, str]]) -> pd.DataFrame:
    """A request row of no clear difference whose pair, made EFFECT times slower, would not
    have been called past Holm's first step (FAMILY_ALPHA / m, the level a lone true
    difference must pass) says it cannot tell: its trials spread as widely as the effect. A
    share (NaN: no scale to slow) keeps its verdict. A row with no p says why: its runs are
    too short to estimate their own drift, or drift within themselves."""
    tests = table["verdict"].isin([BETTER, WORSE, UNCLEAR]) & (table["tested_with"] == "")
    bound = FAMILY_ALPHA / max(1, int((tests & table["p_value"].notna()).sum()))
    for index, (p, why) in seen.items():
        if table.at[index, "verdict"] == UNCLEAR and why:
            table.at[index, "verdict"] = CANNOT_TELL
            table.at[index, "power_note"] = f"cannot tell: {why}"
        elif table.at[index, "verdict"] == UNCLEAR and not np.isnan(table.at[index, "p_value"]) \
                and not np.isnan(p) and p > bound:
            table.at[index, "verdict"] = CANNOT_TELL
            table.at[index, "power_note"] = (
                f"cannot tell: a {EFFECT}x slower side would not be called on these runs "
                "(they spread as widely)")
        elif table.at[index, "verdict"] == UNCLEAR and np.isnan(table.at[index, "p_value"]):
            table.at[index, "verdict"] = CANNOT_TELL
            table.at[index, "power_note"] = "cannot tell: too few trials to test"
    return table


def _with_power(table: pd.DataFrame, spreads: dict[int, np.ndarray]) -> pd.DataFrame:
    """Beside each quality verdict: the smallest difference detected DETECT of the time by
    this family's rule (called in its direction, past Holm's first step: the level a lone true
    difference must pass), the power at POWER_AT, and "underpowered" below DETECT there."""
    tests = table["verdict"].isin([BETTER, WORSE, UNCLEAR]) & (table["tested_with"] == "")
    m = max(1, int((tests & table["p_value"].notna()).sum()))

    for index, differences in spreads.items():
        n = len(differences)

        def called(low: float, high: float, p: float) -> bool:
            text, _ = verdict(low, high, True)
            return text == BETTER and p <= FAMILY_ALPHA / m

        # Under MIN_PAIRED_SCENARIOS nothing is called, whatever the difference.
        curve = (power_curve(differences, called) if n >= MIN_PAIRED_SCENARIOS
                 else np.zeros(len(GRID)))
        at = float(curve[GRID.index(POWER_AT)])
        table.at[index, "detectable"] = detectable(GRID, curve)
        table.at[index, "power_at"] = at
        if at < DETECT:
            table.at[index, "power_note"] = (f"underpowered: a {POWER_AT * 100:.0f}-point "
                                             f"difference is missed {1 - at:.0%} of the time")
    for index in table.index[table["tested_with"] != ""]:
        first = _first_of(table, index)
        for column in ("detectable", "power_at", "power_note"):
            table.at[index, column] = table.at[first, column]
    return table


def _rows(table: pd.DataFrame, side: tuple[str, int],
          runs_of: Mapping[str, list[str]] | None = None) -> pd.DataFrame:
    """The rows of a side's runs at its level (a run's own, without `runs_of`)."""
    name, level = side
    runs = (runs_of or {}).get(name, [name])
    return table[table["source"].isin(runs) & (table["level"] == level)]


def _start(requests: pd.DataFrame, run: tuple[str, int]) -> float:
    """When a run's level started: its first request's start (NaN without start stamps)."""
    if "start_unix_ns" not in requests:
        return np.nan
    return float(_rows(requests, run)["start_unix_ns"].min())


def _scenario_means(trials: pd.DataFrame, column: str) -> pd.Series:
    """One mean of a trial `column` per scenario (the trials of a `PAIRED_KEYS` view), so
    repeats (and repeats lost to failures) change no weight."""
    values, scenarios = trials[column].to_numpy(dtype=float), trials["scenario_id"].to_numpy()
    return pd.Series(values).groupby(pd.Series(scenarios, dtype=object)).mean().dropna()


def _paired(b: pd.Series, o: pd.Series
            ) -> tuple[tuple[float, float, float, int, float], pd.DataFrame]:
    """The paired interval of two sides' per-scenario means, and the means behind it (`base`,
    `other` columns, one row per paired scenario)."""
    result = paired_cluster_bootstrap_diff_ci(b.to_numpy(dtype=float),
                                              b.index.to_numpy(dtype=object),
                                              o.to_numpy(dtype=float),
                                              o.index.to_numpy(dtype=object))
    common = b.index.intersection(o.index)
    return result, pd.DataFrame({"base": b.loc[common], "other": o.loc[common]})


def _measured(rows: pd.DataFrame) -> pd.DataFrame:
    """As in the summary: the system under test's calls only."""
    return rows[rows["measured"].astype(bool)] if "measured" in rows else rows


def _request_side(rows: pd.DataFrame, column: str) -> pd.DataFrame:
    """One side of a request column's tests (`signflip.COLUMNS`): the error rate over every
    request but the cancelled (1 if it failed), a latency over the successful ones. The
    columns are taken one by one: a copy of every request column per figure cost more than
    the tests."""
    if column == "failed":
        failed, keep = failed_and_counted(rows)
        values = failed[keep].astype(float)
    else:
        keep = rows["ok"].astype(bool).to_numpy()
        values = rows[column].to_numpy(dtype=float)[keep]
    # Without trial names or start stamps (hand-made tables), a scenario is one unit.
    trial = rows["trial"] if "trial" in rows else rows["scenario_id"]
    return pd.DataFrame({
        "scenario_id": rows["scenario_id"].to_numpy()[keep], "trial": trial.to_numpy()[keep],
        "start_unix_ns": (rows["start_unix_ns"].to_numpy(dtype=float)[keep]
                          if "start_unix_ns" in rows else np.zeros(int(keep.sum()))),
        "value": values})


def _request_columns(keys: tuple[str, ...]) -> dict[str, list[str]]:
    """Request column → the `REQUEST_KEYS` keys asked for that read it."""
    by_column: dict[str, list[str]] = {}
    for key in keys:
        if key in REQUEST_KEYS:
            by_column.setdefault(REQUEST_KEYS[key][0], []).append(key)
    return by_column


def _paired_requests(base: dict[str, pd.DataFrame], other: dict[str, pd.DataFrame],
                     by_column: dict[str, list[str]], wave: int,
                     by_runs: Callable[[str], tuple[float, float, float, str]]
                     ) -> dict[str, tuple[tuple[float, float, float, int, float], float, float,
                                          str]]:
    """Paired differences of every `REQUEST_KEYS` key asked for (`by_column`; each side's
    frame per column, `_request_side`): the difference of the pooled figures with its
    scenario-bootstrap interval (its scale, within-run), and p with the direction it leans.
    A latency key's p comes from the sides' runs (`by_runs`: key → p, lean, p of a pair
    EFFECT times slower, why no p); a share's (error rate, integrity classes) from the trial
    and time-block tests over the sides' requests (`analysis.metrics.signflip`), which hold
    their level where the bootstrap's p does not (a few scenarios, a few slow trials,
    co-running trials: benchmarks/compare_small_n.py). The percentiles of one column share
    one bootstrap pass. `wave`: how many trials ran together."""
    qs = {column: tuple(REQUEST_KEYS[k][1] for k in wanted)
          for column, wanted in by_column.items()}
    # A column one side has no value of (no request, or none classified for an integrity
    # class) pairs no trial: no test.
    shares = [column for column in by_column if qs[column][0] is None
              and base[column]["value"].notna().any() and other[column]["value"].notna().any()]
    all_tested = dict(zip(shares, paired_request_tests(
        [(base[column], other[column], qs[column]) for column in shares], wave), strict=True))
    out: dict[str, tuple[tuple[float, float, float, int, float], float, float, str]] = {}
    for column, wanted in by_column.items():
        b, o = base[column], other[column]
        data = (b["value"].to_numpy(), b["scenario_id"].to_numpy(), o["value"].to_numpy(),
                o["scenario_id"].to_numpy())
        if qs[column][0] is None:  # a share: the mean of 0/1 per request
            found = [paired_cluster_bootstrap_diff_ci(*data)]
            tested = [(p, lean, np.nan, why) for p, lean, _, why in all_tested.get(
                column, [(np.nan, 0.0, 0, NO_PAIRED_TRIALS)])]
        else:
            found = paired_cluster_bootstrap_quantile_diff_ci(
                *data, tuple(float(q or 0) for q in qs[column]), resamples=QUANTILE_RESAMPLES)
            tested = [by_runs(key) for key in wanted]
        out.update(zip(wanted, [((d, lo, hi, n, p), lean, seen, why)
                                for (d, lo, hi, n, _), (p, lean, seen, why)
                                in zip(found, tested, strict=True)], strict=True))
    return out


def _row(diff: float, low: float, high: float, n: int, p: float,
         larger_is_better: bool | None, lean: float | None = None) -> dict[str, object]:
    """A row's delta, interval and verdict before the family's correction. With `lean` (a
    request row: the direction its sign-flip test leans), the verdict follows the test, and
    the interval, of the pooled figure, only shows its scale."""
    if lean is None:
        text, better = verdict(low, high, larger_is_better)
    elif larger_is_better is None or np.isnan(p) or lean == 0:
        text, better = ("" if larger_is_better is None else UNCLEAR), None
    else:
        better = (lean > 0) == larger_is_better
        text = BETTER if better else WORSE
    if n and text and n < MIN_PAIRED_SCENARIOS:  # outside the family Holm corrects
        text, better = TOO_FEW, None
    # Over the scenarios both runs have; for quality, the mean of per-scenario differences.
    return {"delta": diff, "delta_ci_low": low, "delta_ci_high": high, "n_paired": float(n),
            "p_value": p, "verdict": text if n else "", "better": better}
