"""The end-of-run terminal table: one row per level, figures formatted, gaps shown as '–'."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from analysis.console import COLUMNS, GROUPING, header, summary_table, summary_table_from
from analysis.metrics import BY_KEY, figure_of, latency


def _summary(**overrides) -> pd.DataFrame:
    row = {"source": "s", "level": 4, "n_trials": 10, "n_excluded": 2, "excluded_share": 0.25,
           "tsq_mean": 0.5,
           "tsq_ci_low": 0.25, "tsq_ci_high": 0.75, "ttft_ms_p50": 1234.56, "ttft_ms_p95": 2000.0,
           "itl_ms_p50": 7.04, "e2e_ms_p50": 9000.4, "output_token_throughput": 321.0,
           "request_throughput": 1.5, "achieved_concurrency": 3.9}
    row.update(overrides)
    return pd.DataFrame([row])


def test_one_row_per_level_with_formatted_figures():
    lines = summary_table(_summary()).splitlines()
    # The share of finished trials the quality figures leave out stands beside TSQ.
    assert len(lines) == 2 and lines[0].split()[:4] == ["level", "trials", "TSQ", "excluded"]
    cells = lines[1].split()
    assert cells[:5] == ["4", "10", "0.500", "2", "(25%)"]
    assert "[0.250," in cells and "1,234.6" in cells and "7.0" in cells and "3.90" in cells


def test_missing_figures_are_dashes_and_sources_shown_when_several():
    frame = pd.concat([_summary(tsq_mean=math.nan, tsq_ci_low=math.nan),
                       _summary(source="other", ttft_ms_p50=None)])
    lines = summary_table(frame).splitlines()
    assert lines[0].split()[0] == "source"
    assert lines[1].split()[0] == "s" and lines[1].split()[3] == "–"
    assert lines[1].split()[6] == "–"  # no TSQ, no interval
    assert lines[2].split()[0] == "other" and "–" in lines[2].split()


def test_reads_a_written_summary(tmp_path):
    assert summary_table_from(tmp_path) is None
    _summary().to_csv(tmp_path / "summary.csv", index=False)
    assert summary_table_from(tmp_path).splitlines()[1].split()[0] == "4"


def test_every_header_is_the_registry_name_of_its_column():
    """No header is typed in the console: each is its metric's short name, with the statistic
    and unit of a distribution's figure."""
    for name, column, _ in COLUMNS:
        if column in GROUPING:
            assert name == column
            continue
        metric, stat = figure_of(column)  # KeyError: a column no metric defines
        if metric.distribution and stat:
            assert name == f"{metric.short} {stat} {metric.unit}"
        else:
            assert name in (metric.short, f"{metric.short} 95% CI")
    assert header("ttft_ms_p95") == f"{latency.TTFT.metric.short} p95 ms"
    assert header("tsq_ci_low") == f"{BY_KEY['tsq'].short} 95% CI"


def test_a_column_the_registry_does_not_know_has_no_header():
    with pytest.raises(KeyError, match="ttft_sm_p50: no metric"):
        header("ttft_sm_p50")
