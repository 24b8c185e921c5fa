"""`--compare` weighs scenarios, not trials, and controls its error rate across verdicts:
synthetic sweeps (analysis/synthetic.py) of one agent, through the report's own compare."""

from __future__ import annotations

import json

import numpy as np
import pytest

from analysis.compare import compare_table
from analysis.metrics.base import holm
from analysis.report import write_report
from analysis.summary import summarize
from analysis.tables import load_many
from tests.support import quality_jobs

SCENARIOS = [f"banking-{i:03d}" for i in range(20)]
DIFFICULTY = np.linspace(0.1, 0.9, len(SCENARIOS))
REPEATS = 4
INFRA_EXCLUDED_KEYS = ("tsq_mean", "solved_mean", "param_validity_mean")


def one_agent(seed: int, infra_on: set[str] = frozenset(),
              repeats: int = REPEATS) -> dict[str, list]:
    """The same agent every time (each scenario's TSQ its difficulty plus a little noise);
    in the scenarios of `infra_on`, all but one repeat lost to infra failures."""
    rng = np.random.default_rng(seed)
    out: dict[str, list] = {}
    for scenario, level in zip(SCENARIOS, DIFFICULTY, strict=True):
        values = [float(np.clip(level + rng.normal(0, 0.02), 0, 1)) for _ in range(repeats)]
        out[scenario] = [{"tsq": v, "infra": scenario in infra_on and n > 0}
                         for n, v in enumerate(values)]
    return out


def comparison(report) -> list[dict]:
    return json.loads((report.parent / "summary.json").read_text())["comparison"]


def test_runs_differing_only_in_infra_failures_show_no_quality_difference(tmp_path):
    easy = set(SCENARIOS[-8:])  # the infra failures hit the scenarios the agent does best
    base = quality_jobs.sweep(tmp_path / "base", {2: one_agent(1)})
    lossy = quality_jobs.sweep(tmp_path / "lossy", {2: one_agent(2, infra_on=easy)})
    rows = {r["metric"]: r for r in comparison(write_report(base, out=tmp_path / "r",
                                                            compare=[lossy], draw=False))}
    # Averaged per trial, the lossy run would look worse: its easy scenarios keep 1 trial of 4.
    assert rows["tsq_mean"]["value"] < rows["tsq_mean"]["baseline"] - 0.05
    for key in INFRA_EXCLUDED_KEYS:
        assert rows[key]["verdict"] == "no clear difference", (key, rows[key])
        assert abs(rows[key]["delta"]) < 0.02, (key, rows[key])
        assert rows[key]["interval"].startswith("per-scenario means")
    # Counting infra failures as 0 is where the lost trials belong, and they show there.
    assert rows["tsq_infra0_mean"]["verdict"] == "worse"


def test_a_real_difference_survives_the_correction_and_is_still_called(tmp_path):
    base = quality_jobs.sweep(tmp_path / "base", {1: one_agent(1), 2: one_agent(3)})
    shifted = {s: [{"tsq": min(1.0, t["tsq"] + 0.1)} for t in trials]
               for s, trials in one_agent(4).items()}
    better = quality_jobs.sweep(tmp_path / "better", {1: one_agent(5), 2: shifted})
    rows = comparison(write_report(base, out=tmp_path / "r", compare=[better], draw=False))
    called = {(r["level"], r["metric"]): r["verdict"] for r in rows}
    assert called[("c2", "tsq_mean")] == "better"
    assert called[("c1", "tsq_mean")] == "no clear difference"
    family = [r for r in rows if r["verdict"]]
    assert all(r["holm_reject"] == (r["verdict"] in ("better", "worse")) for r in family)


def test_holm_step_down():
    # m = 4: thresholds 0.0125, 0.0167, 0.025, 0.05 in order of p.
    assert holm([0.01, 0.04, 0.03, 0.005]) == [True, False, False, True]
    assert holm([0.001, 0.012, 0.02, 0.049]) == [True, True, True, True]
    assert holm([0.02, float("nan"), 0.02]) == [True, False, True]  # NaN is not in the family
    assert holm([0.03, 0.03]) == [False, False]  # Bonferroni's first step fails: none called


@pytest.mark.slow  # 18 synthetic sweeps read and compared: minutes on 2 loaded cores
def test_holm_keeps_false_calls_rare_where_uncorrected_intervals_make_them(tmp_path):
    """Error rate of the verdict rule, by simulation through the compare itself: two runs of
    one agent against a baseline run of it at four levels (40 verdicts per compare, no true
    difference), six independent compares. Uncorrected 95 % intervals exclude 0 somewhere in
    most compares; Holm's family-wise 5 % allows about one compare in twenty.

    Two repeats a scenario: the verdicts weigh per-scenario means, so the repeats only set how
    noisy each mean is, and half the trials halve the sweeps written and read. Over 40 seeds
    the rates stay what the bounds below expect (2 repeats: Holm 2/40, uncorrected 18/40)."""
    with_false_call, uncorrected = 0, 0
    for seed in range(6):
        runs = [quality_jobs.sweep(tmp_path / f"s{seed}r{n}",
                                   {lv: one_agent(1000 * seed + 10 * n + lv, repeats=2)
                                    for lv in (1, 2, 4, 8)}) for n in range(3)]
        tables = load_many(runs)
        rows = compare_table(summarize(tables), tables.trials, tables.requests,
                             power=False)  # the verdicts alone are under test
        family = rows[rows["verdict"] != ""]
        assert len(family) >= 40
        with_false_call += bool(family["verdict"].isin(["better", "worse"]).any())
        uncorrected += bool(((family["delta_ci_low"] > 0) | (family["delta_ci_high"] < 0)).any())
    assert with_false_call <= 1
    assert uncorrected >= 2  # what the correction is for
