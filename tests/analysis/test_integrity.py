"""Tool-call integrity per level: the statistics on known values, the reading layer on trials
the agent's own code wrote (tests/support/integrity_sweep.py), the report's table and figure,
and the comparison of two runs."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analysis.compare import compare_table
from analysis.integrity import (
    block_test,
    design_effect,
    level_table,
    sign_test,
    wilson,
    worse_levels,
)
from analysis.metrics.integrity import ANY_COLUMN, COLUMNS
from analysis.report import write_report
from analysis.summary import summarize
from analysis.tables import load, load_many
from tests.support.integrity_sweep import write_integrity_sweep


def test_statistics_on_known_values():
    assert sign_test(5, 0) == 1 / 32
    assert sign_test(0, 0) == 1.0
    assert sign_test(1, 1) == 0.75  # P(at least one rise of two)
    low, high = wilson(0, 100)
    assert low == 0 and high == pytest.approx(0.0370, abs=1e-4)  # open above 0 with no failure
    assert wilson(10, 100)[0] == pytest.approx(0.0552, abs=1e-4)
    # failures spread evenly: no clustering beyond binomial; all in one scenario: a lot
    assert design_effect(np.array([1.0, 1, 1, 1]), np.array([10.0, 10, 10, 10])) == 1.0
    assert design_effect(np.array([4.0, 0, 0, 0]), np.array([10.0, 10, 10, 10])) > 3
    assert design_effect(np.zeros(4), np.full(4, 10.0)) == 1.0
    # every level block above every reference block: the one most extreme split of C(16, 8)
    assert block_test(np.full(8, 0.2), np.zeros(8)) == pytest.approx(1 / 12870)
    assert block_test(np.zeros(8), np.zeros(8)) == 1.0


def _requests(rates: dict[int, float], scenarios: int = 12, replies: int = 8,
              column: str = "tc_unknown_tool", seed: int = 0) -> pd.DataFrame:
    """Classified replies at each level; `column` (and tc_any) failing at the given rate."""
    rng = np.random.default_rng(seed)
    rows = []
    for level, rate in rates.items():
        for i in range(scenarios * replies):
            fail = float(rng.random() < rate)
            rows.append({"source": "s", "level": level, "scenario_id": f"sc{i % scenarios}",
                         "start_unix_ns": i, **dict.fromkeys(COLUMNS, 0.0),
                         column: fail, ANY_COLUMN: fail})
    return pd.DataFrame(rows)


def test_a_class_that_rises_with_load_is_worse_there_and_nowhere_else():
    table = level_table(_requests({1: 0.0, 2: 0.0, 4: 0.5, 8: 0.5}))
    assert worse_levels(table) == {("s", 4): ["tc_unknown_tool", "tool_call_error_rate"],
                                   ("s", 8): ["tc_unknown_tool", "tool_call_error_rate"]}
    ref = table[table["level"] == 1]
    assert ref["p_value"].isna().all() and not ref["worse"].any()
    row = table[(table["level"] == 4) & (table["class"] == "tc_unknown_tool")].iloc[0]
    assert row["n"] == 96 and row["ci_low"] < row["rate"] < row["ci_high"]
    assert row["up"] >= 10 and row["down"] == 0


def test_the_same_failure_rate_at_every_level_is_not_worse():
    table = level_table(_requests({1: 0.1, 2: 0.1, 4: 0.1, 8: 0.1}))
    assert worse_levels(table) == {}
    assert (table.loc[table["class"] == "tc_unknown_tool", "failures"] > 0).all()


def test_one_burst_at_a_level_is_not_load():
    """Every failure of the level in one time block: many scenarios rose (the scenario test
    alone would call it), but the level's other blocks fail no more than the reference's."""
    frame = _requests({1: 0.0, 2: 0.0})
    burst = (frame["level"] == 2) & (frame["start_unix_ns"] < 12)
    frame.loc[burst, ["tc_unknown_tool", ANY_COLUMN]] = 1.0
    table = level_table(frame)
    row = table[(table["level"] == 2) & (table["class"] == "tc_unknown_tool")].iloc[0]
    assert row["p_scenarios"] < 0.001 and row["p_time"] > 0.05
    assert worse_levels(table) == {}


def test_unclassified_replies_count_nowhere():
    frame = _requests({1: 0.0, 4: 0.5})
    frame.loc[frame["level"] == 4, "tc_markup_in_content"] = math.nan
    table = level_table(frame)
    markup = table[(table["class"] == "tc_markup_in_content")]
    assert list(markup["level"]) == [1]  # nothing measured at c4: no row, not a 0 %
    assert level_table(frame.assign(**{ANY_COLUMN: math.nan})).empty


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory):
    root = tmp_path_factory.mktemp("integrity")
    faulty = write_integrity_sweep(root / "faulty", [1, 2, 4], fault="markup_in_content")
    clean = write_integrity_sweep(root / "clean", [1, 2, 4])
    return faulty, clean


def test_reading_layer_classifies_the_agents_replies(sweeps):
    faulty, _ = sweeps
    req = load(faulty).requests
    assert req[ANY_COLUMN].notna().all()  # every reply offered tools and succeeded
    by_level = req.groupby("level")["tc_markup_in_content"].sum()
    # two call replies of three per trial, 12 scenarios x 2 repeats, from c4 on
    assert by_level.to_dict() == {1: 0, 2: 0, 4: 48}
    assert req.loc[req["level"] < 4, ANY_COLUMN].sum() == 0


def test_report_has_the_table_the_figure_and_the_summary_rate(sweeps, tmp_path):
    faulty, _ = sweeps
    report = write_report(faulty, out=tmp_path)
    text = report.read_text()
    section = text.split("## Tool-call integrity vs concurrency")[1].split("\n## ")[0]
    assert "markup in content" in section and "▲" in section
    markup_row = next(line for line in section.splitlines()
                      if line.startswith("| markup in content"))
    assert markup_row.count("▲") == 1 and markup_row.split("|")[-2].strip().endswith("▲")
    assert "No failure at any level:" in section
    assert (tmp_path / "plots" / "integrity_vs_concurrency.png").stat().st_size > 0
    table = pd.read_csv(tmp_path / "integrity.csv")
    worse = table[table["worse"]]
    assert set(worse["level"]) == {4}
    assert set(worse["class"]) == {"tc_markup_in_content", ANY_COLUMN}
    summary = pd.read_csv(tmp_path / "summary.csv").set_index("level")
    assert summary.loc[4, "tool_call_error_rate"] == pytest.approx(48 / 72)
    assert summary.loc[1, "tool_call_error_rate"] == 0 and summary.loc[1, "n_tool_replies"] == 72


def test_compare_lists_the_classes_either_run_shows(sweeps):
    faulty, clean = sweeps
    tables = load_many([clean, faulty])
    rows = compare_table(summarize(tables), tables.trials, tables.requests)
    at4 = rows[rows["level"] == "c4"].set_index("metric")
    assert at4.loc["tc_markup_in_content", "delta"] == pytest.approx(48 / 72)
    assert at4.loc["tc_markup_in_content", "verdict"] == "worse"
    assert "tc_unknown_tool" not in at4.index  # neither run shows it: no row
    assert "tc_markup_in_content" not in set(rows.loc[rows["level"] == "c1", "metric"])


def test_a_run_without_classified_replies_says_so(tmp_path):
    from analysis.synthetic import synthetic_sweep

    sweep = synthetic_sweep(tmp_path / "old", [1, 2], trials_per_level=4, requests_per_trial=2)
    text = write_report(sweep, out=tmp_path / "out", draw=False).read_text()
    section = text.split("## Tool-call integrity vs concurrency")[1].split("\n## ")[0]
    assert "Not measured" in section and not (tmp_path / "out" / "integrity.csv").exists()
