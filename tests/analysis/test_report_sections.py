"""report.md as a reader meets it: the terminal's summary table first, no table of zeros for a
self-evaluation that was off, consistency shares shown as percentages, counts written as
integers in the CSVs."""

from __future__ import annotations

import csv

import pandas as pd

from analysis.console import summary_table_from
from analysis.metrics import ALL
from analysis.metrics.latency import SERVER_TTFT, TTFT
from analysis.quality_report import goal_row, quality_row
from analysis.report import write_report
from analysis.synthetic import synthetic_sweep, write_job, write_trial


def test_report_md_starts_with_the_terminal_summary_table(tmp_path):
    sweep = synthetic_sweep(tmp_path / "s", [1, 4], trials_per_level=6, requests_per_trial=2)
    text = write_report(sweep, draw=False).read_text()
    first_section = text.split("\n## ", 1)[1]
    assert first_section.startswith("Summary")
    assert summary_table_from(sweep) in first_section.split("```")[1]


def test_counts_are_integers_in_the_csvs(tmp_path):
    sweep = synthetic_sweep(tmp_path / "s", [2], trials_per_level=5, requests_per_trial=2)
    write_report(sweep, draw=False)
    row = next(csv.DictReader((sweep / "summary.csv").open()))
    for column in ("level", "n_trials", "n_scored", "n_counted", "ttft_ms_count",
                   "configured_concurrency"):
        assert row[column].isdigit(), (column, row[column])
    assert "." in row["ttft_ms_p50"]  # measurements keep their decimals


def test_self_evaluation_off_is_one_line_not_a_table_of_zeros(tmp_path):
    job = write_job(tmp_path / "job", 1)
    write_trial(job, "banking-000__a", scenario_id="banking-000", rewards={"tsq": 1.0},
                agent_status={"status": "ok"})
    text = write_report(job, out=tmp_path / "r", draw=False).read_text()
    section = text.split("## Self-evaluation", 1)[1].split("\n## ", 1)[0]
    assert "Off: no trial had an evaluator call" in section
    assert "| source |" not in section


def test_consistency_shares_read_as_percentages():
    import pandas as pd

    from analysis.consistency_report import console_table

    frame = pd.DataFrame([{
        "source": "s", "level": 4, "reference": 1, "tool_f1_n": 3, "harness_lost": 0.0,
        **{f"{k}{s}": v for k, v in (("tool_f1", 1.0), ("tool_f1_floor", 1.0),
                                     ("tool_f1_drop", 0.0), ("arg_agreement", 1.0),
                                     ("schema_valid", 1.0), ("malformed", 0.0),
                                     ("truncated", 1.0), ("lost", 0.25))
           for s in ("", "_ci_low", "_ci_high")}}])
    text = console_table(frame)
    assert "truncated replies %" in text and "100.0 %" in text and "25.0 %" in text


def test_quality_table_headers_are_registry_names():
    """The quality tables type no header: each is a metric's table or short name."""
    row = pd.Series({"source": "s", "level": 1, "n_counted": 3, "n_excluded": 0,
                     "excluded_share": 0.0, "k": 1.0, "labels": "file@1"})
    known = {name for m in ALL for name in (m.label, m.short)} | {"source", "level"}
    for shown in (quality_row(row), goal_row(row)):
        assert set(shown) <= known, set(shown) - known


def test_server_section_names_the_client_figures_from_the_registry():
    assert TTFT.metric.stat_label("mean") == "first chunk mean (ms)"
    assert SERVER_TTFT.metric.stat_label("mean") == "server TTFT mean (ms)"
