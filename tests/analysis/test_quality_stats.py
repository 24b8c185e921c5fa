"""Quality statistics on hand-made cases with known answers: scenario-cluster bootstrap,
no interval from one scenario, infra failures as 0, solved, pass@k and pass^k."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analysis.console import summary_table
from analysis.metrics.base import (
    _sorted_by_value,
    _weighted_percentiles,
    bootstrap_mean_ci,
    cluster_bootstrap_mean_ci,
    paired_cluster_bootstrap_diff_ci,
    paired_cluster_bootstrap_diff_cis,
)
from analysis.metrics.quality import (
    SOLVED_DERIVED,
    SOLVED_FROM_REWARD,
    quality_metrics,
    with_solved,
)
from analysis.report import write_report
from analysis.summary import summarize
from analysis.tables import load
from tests.support import quality_jobs


def width(ci: tuple[float, float, float]) -> float:
    return ci[2] - ci[1]


def test_cluster_bootstrap_widens_with_correlated_repeats():
    """40 scenarios of spread difficulty, 5 near-identical repeats each: the trial bootstrap
    sees 200 'independent' values and is too narrow by about √5; the scenario bootstrap is
    not fooled."""
    rng = np.random.default_rng(3)
    difficulty = rng.uniform(0, 1, size=40)
    values = np.repeat(difficulty, 5) + rng.normal(0, 0.02, size=200)
    clusters = np.repeat([f"banking-{i:03d}" for i in range(40)], 5)
    by_trial = bootstrap_mean_ci(values)
    by_scenario = cluster_bootstrap_mean_ci(values, clusters)
    assert by_scenario[0] == pytest.approx(values.mean()) == pytest.approx(by_trial[0])
    assert width(by_scenario) / width(by_trial) == pytest.approx(math.sqrt(5), rel=0.2)
    # Independent repeats (no scenario effect) give back the trial bootstrap's width.
    flat = rng.uniform(0, 1, size=200)
    assert width(cluster_bootstrap_mean_ci(flat, clusters)) == pytest.approx(
        width(bootstrap_mean_ci(flat)), rel=0.2)


def test_one_trial_per_scenario_is_the_plain_bootstrap():
    rng = np.random.default_rng(5)
    values = rng.uniform(0, 1, size=150)
    ids = np.array([f"s{i}" for i in range(150)])
    assert cluster_bootstrap_mean_ci(values, ids) == pytest.approx(bootstrap_mean_ci(values))
    # Another seed: the same interval up to resampling noise.
    other_seed = cluster_bootstrap_mean_ci(values, ids, seed=11)
    assert other_seed == pytest.approx(bootstrap_mean_ci(values), abs=0.01)


def test_one_scenario_or_one_trial_has_no_interval():
    mean, low, high = cluster_bootstrap_mean_ci(np.array([0.2, 0.9, 0.4]), np.array(["a"] * 3))
    assert mean == pytest.approx(0.5) and math.isnan(low) and math.isnan(high)
    mean, low, high = bootstrap_mean_ci(np.array([0.7]))
    assert mean == 0.7 and math.isnan(low) and math.isnan(high)
    assert all(math.isnan(x) for x in cluster_bootstrap_mean_ci(np.array([]), np.array([])))


def test_single_trial_level_shows_no_interval(tmp_path):
    sweep = quality_jobs.sweep(tmp_path / "sweep", {1: {"banking-000": [0.5]},
                                                    2: {"banking-000": [1.0],
                                                        "banking-001": [0.0]}})
    summary = summarize(load(sweep)).set_index("level")
    assert summary.loc[1, "tsq_mean"] == 0.5
    assert math.isnan(summary.loc[1, "tsq_ci_low"]) and math.isnan(summary.loc[1, "tsq_ci_high"])
    assert summary.loc[2, "tsq_ci_low"] < summary.loc[2, "tsq_ci_high"]
    text = write_report(sweep).read_text()  # with figures: a NaN interval must draw too
    assert "| sweep | 1 | 1 | 0 (0%) | 1 | 0 | 0.5 [—] |" in text
    console = summary_table(summary.reset_index()).splitlines()
    assert "—" in console[1] and "—" not in console[2]


def test_infra_failures_excluded_and_counted_as_zero(tmp_path):
    job = quality_jobs.job(tmp_path / "job", {
        "banking-000": [1.0], "banking-001": [1.0], "banking-002": [1.0], "banking-003": [0.0],
        "banking-004": [{"tsq": 1.0, "infra": True}]})  # its reward must not count
    row = summarize(load(job)).iloc[0]
    assert row["n_infra_failed"] == 1 and row["n_counted"] == 4
    assert row["tsq_mean"] == pytest.approx(3 / 4)
    assert row["tsq_infra0_mean"] == pytest.approx(3 / 5)
    assert row["solved_mean"] == pytest.approx(3 / 4)
    assert row["solved_infra0_mean"] == pytest.approx(3 / 5)
    assert row["tsq_infra0_ci_low"] < row["tsq_infra0_mean"] < row["tsq_infra0_ci_high"]
    out = write_report(job, out=tmp_path / "r", draw=False).parent
    scenarios = pd.read_csv(out / "scenarios.csv").set_index("scenario_id")
    assert scenarios.loc["banking-004", ["n", "n_infra_failed"]].tolist() == [0, 1]


def test_pass_at_k_and_pass_hat_k_with_two_repeats(tmp_path):
    """A solved twice, B once, C never: pass@1 = (1 + ½ + 0)/3, pass@2 = (1 + 1 + 0)/3,
    pass^2 = (1 + 0 + 0)/3. `solved` derived from precision = recall = 1."""
    job = quality_jobs.job(tmp_path / "job", {
        "banking-000": [1.0, 1.0], "banking-001": [1.0, 0.6], "banking-002": [0.3, 0.0]})
    row = summarize(load(job)).iloc[0]
    assert row["k"] == 2 and row["n_scenarios"] == 3
    assert row["pass_at_1"] == pytest.approx(0.5)
    assert row["pass_at_k"] == pytest.approx(2 / 3)
    assert row["pass_hat_k"] == pytest.approx(1 / 3)
    assert row["pass_at_k_ci_low"] <= 2 / 3 <= row["pass_at_k_ci_high"]
    assert row["solved_mean"] == pytest.approx(0.5)
    assert row["solved_from"] == SOLVED_DERIVED
    # A trial (not a scenario) is not the unit: its interval spans whole scenarios.
    assert row["solved_ci_low"] == pytest.approx(0.0) and row["solved_ci_high"] == 1.0
    out = write_report(job, out=tmp_path / "r", draw=False).parent
    trials = pd.read_csv(out / "trials.csv").sort_values("trial")
    assert list(trials["solved"]) == [1, 1, 1, 0, 0, 0]  # the flag each trial counted with
    scenarios = pd.read_csv(out / "scenarios.csv").set_index("scenario_id")
    assert list(scenarios["n"]) == [2, 2, 2] and list(scenarios["c"]) == [2, 1, 0]


def test_solved_prefers_the_verifiers_own_flag():
    trials = pd.DataFrame({"scenario_id": ["a", "b", "c"], "in_quality": [True] * 3,
                           "precision": [1.0, 1.0, 0.5], "recall": [1.0, 1.0, 1.0],
                           "solved": [0.0, np.nan, np.nan]})
    flagged, source = with_solved(trials)
    assert list(flagged["solved"]) == [0.0, 1.0, 0.0]
    assert SOLVED_FROM_REWARD in source and SOLVED_DERIVED in source and "mixed" in source
    _, source = with_solved(trials.assign(solved=[0.0, 1.0, 1.0]))
    assert source == SOLVED_FROM_REWARD


def test_resampled_percentile_equals_numpy_on_the_replicated_sample():
    """The latency bootstrap weights each request by how often its scenario was drawn; that
    must be numpy's percentile of the sample with each request repeated that many times."""
    rng = np.random.default_rng(2)
    values, clusters = rng.exponential(50, size=60), rng.integers(0, 8, size=60)
    position = pd.Series(np.arange(8), index=pd.Index(list(range(8)), dtype=object))
    ordered, codes = _sorted_by_value(values, clusters, position)
    drawn = rng.integers(0, 3, size=(20, 8)).astype(np.int32)
    drawn[drawn.sum(axis=1) == 0, 0] = 1
    got = _weighted_percentiles(ordered, codes, drawn, (50, 99))
    expected = [[np.percentile(np.repeat(ordered, row[codes]), q) for q in (50, 99)]
                for row in drawn]
    assert got == pytest.approx(np.array(expected))


def test_several_pairs_in_one_call_each_get_what_they_get_alone():
    """The power simulation tests one pair at several sizes in one call: each must be the
    one-pair result, whatever clusters it pairs (its NaNs, a scenario missing, one left)."""
    rng = np.random.default_rng(4)
    ids = np.array([f"s{i}" for i in range(12)], dtype=object)
    base = rng.normal(0.5, 0.2, 12)
    others = [base + 0.1 * k + rng.normal(0, 0.05, 12) for k in range(3)]
    others.append(np.where(np.arange(12) % 4 == 0, np.nan, others[0]))  # 3 scenarios lost
    others.append(np.where(np.arange(12) == 5, others[1], np.nan))  # one scenario paired
    together = paired_cluster_bootstrap_diff_cis(base, ids, others, ids, resamples=300)
    alone = [paired_cluster_bootstrap_diff_ci(base, ids, o, ids, resamples=300) for o in others]
    assert repr(together) == repr(alone)
    assert [r[3] for r in together] == [12, 12, 12, 9, 1]
    assert together[0][0] == pytest.approx(np.mean(others[0] - base))
    assert math.isnan(together[4][1])  # one paired scenario: no interval


def test_goal_shares_leave_out_trials_without_those_goals():
    """goals_declined is 1.0 in reward.json for a trial with no no-tool goal: such trials are
    left out of its mean (they would raise it), while a trial scored 0 without a reward file
    still counts."""
    trials = pd.DataFrame({
        "scenario_id": ["a", "b", "c", "d"], "in_quality": [True] * 4, "status": ["scored"] * 4,
        "reward_imputed": [False, False, False, True],
        "tsq": [1.0, 1.0, 0.5, 0.0], "precision": [1.0] * 3 + [0.0],
        "recall": [1.0] * 3 + [0.0], "solved": [1.0, 0.0, 0.0, 0.0],
        "param_validity": [1.0] * 4, "multiset_f1": [1.0] * 4, "goal_coverage": [1.0] * 4,
        "goals_served": [1.0, 1.0, 0.5, 0.0], "goals_declined": [1.0, 0.0, 1.0, 0.0],
        "goal_score": [1.0, 0.5, 0.5, 0.0], "n_goals_servable": [2.0, 1.0, 2.0, 0.0],
        "n_goals_no_tool": [0.0, 1.0, 0.0, 0.0],
    })
    out = quality_metrics(trials)
    assert out["goals_declined_mean"] == pytest.approx(0.0)  # trial b, and imputed d
    assert out["goals_served_mean"] == pytest.approx(2.5 / 4)
    assert out["goal_score_mean"] == pytest.approx(2.0 / 4)
