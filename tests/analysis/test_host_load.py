"""A level measured on a busy client host says so: host_load.json read into the summary, a
section in the report, and a warning on the terminal table when the host was saturated."""

from __future__ import annotations

import math

from analysis.console import summary_table
from analysis.report import write_report
from analysis.summary import summarize
from analysis.synthetic import synthetic_sweep
from analysis.tables import load
from contracts.host_load import HOST_LOAD_FILE, HostLoad
from contracts.sweep import level_dir


def _load(busy: float, other: float, server: float | None) -> str:
    return HostLoad(cpus=2, seconds=60, samples=60, cpu_busy=busy, cpu_busy_p95=busy,
                    load1_max=3.0, client_cpu=busy - other - (server or 0), server_cpu=server,
                    other_cpu=other).model_dump_json()


def test_a_saturated_level_is_named_and_a_quiet_one_is_not(tmp_path):
    sweep = synthetic_sweep(tmp_path / "s", [1, 2, 4], 2, 2)
    (level_dir(sweep, 1) / HOST_LOAD_FILE).write_text(_load(0.97, 0.55, 0.30))
    (level_dir(sweep, 2) / HOST_LOAD_FILE).write_text(_load(0.40, 0.05, None))
    summary = summarize(load(sweep))
    by_level = summary.set_index("level")
    assert by_level.loc[1, "host_cpu_busy"] == 0.97 and by_level.loc[1, "host_other_cpu"] == 0.55
    assert math.isnan(by_level.loc[2, "host_server_cpu"])  # a server the sweep did not start
    assert math.isnan(by_level.loc[4, "host_cpu_busy"])  # no record: unknown, not idle
    warnings = [ln for ln in summary_table(summary).splitlines() if ln.startswith("WARNING")]
    assert len(warnings) == 1 and "c1 (97% busy, other work 55%)" in warnings[0]
    assert "c2" not in warnings[0]


def test_the_report_has_a_client_host_section(tmp_path):
    sweep = synthetic_sweep(tmp_path / "s", [1, 2], 2, 2)
    (level_dir(sweep, 2) / HOST_LOAD_FILE).write_text(_load(0.95, 0.6, 0.2))
    text = write_report(sweep, draw=False).read_text()
    assert "## Client host" in text
    assert "the client host's CPU was saturated at c2" in text  # in the summary block


def test_an_unreadable_host_record_is_no_figure(tmp_path):
    sweep = synthetic_sweep(tmp_path / "s", [1], 1, 1)
    (level_dir(sweep, 1) / HOST_LOAD_FILE).write_text("{not json")
    summary = summarize(load(sweep))
    assert "host_cpu_busy" not in summary or summary["host_cpu_busy"].isna().all()
