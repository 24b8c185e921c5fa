"""`--compare` calls no verdict from a handful of scenarios: a clear shift over 2 scenarios is
shown with its delta and interval but "not called"; over enough scenarios it is called."""

from __future__ import annotations

import json

from analysis.compare import MIN_PAIRED_SCENARIOS, TOO_FEW
from analysis.report import write_report
from tests.support import quality_jobs


def _agent(scenarios: int, shift: float) -> dict[str, list]:
    return {f"banking-{i:03d}": [{"tsq": min(1.0, 0.3 + 0.02 * i + shift + 0.01 * r)}
                                 for r in range(3)] for i in range(scenarios)}


def _tsq_row(tmp_path, scenarios: int) -> dict:
    base = quality_jobs.sweep(tmp_path / f"b{scenarios}", {2: _agent(scenarios, 0.0)})
    other = quality_jobs.sweep(tmp_path / f"o{scenarios}", {2: _agent(scenarios, 0.3)})
    report = write_report(base, out=tmp_path / f"r{scenarios}", compare=[other], draw=False)
    rows = json.loads((report.parent / "summary.json").read_text())["comparison"]
    return next(r for r in rows if r["metric"] == "tsq_mean")


def test_two_scenarios_are_not_called_better(tmp_path):
    row = _tsq_row(tmp_path, 2)
    assert row["n_paired"] == 2 and row["delta"] > 0.25
    assert row["verdict"] == TOO_FEW and row["better"] is None
    section = (tmp_path / "r2" / "report.md").read_text().split("## Comparison", 1)[1]
    tsq = next(line for line in section.splitlines() if "| tsq_mean |" in line)
    assert f"| {TOO_FEW} |" in tsq and tsq.rstrip(" |").endswith("underpowered")


def test_enough_scenarios_are_called(tmp_path):
    row = _tsq_row(tmp_path, MIN_PAIRED_SCENARIOS)
    assert row["verdict"] == "better"
