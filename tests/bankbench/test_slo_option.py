"""`--slo`: one format (repeatable NAME=NUMBER, comma lists too, repeats accumulate) and one
metric vocabulary for `bankbench report` and `bankbench capacity`."""

from __future__ import annotations

import json

import pytest

from analysis.metrics.goodput import SLO
from bankbench.cli import main
from bankbench.slo_option import items, level_slos, request_slo


def test_repeated_flags_accumulate_and_comma_lists_are_read():
    assert items(["ttft_ms=500", "itl_ms=50,e2e_ms=30000"]) == [
        ("ttft_ms", 500.0), ("itl_ms", 50.0), ("e2e_ms", 30000.0)]
    assert request_slo(["ttft_ms=500", "e2e_ms=30000"]) == SLO(ttft_ms=500, e2e_s=30)
    assert request_slo(["tpot_ms=40"]) == SLO(itl_ms=40)
    assert request_slo(None) is None
    assert level_slos(["ttft_p90_ms=500", "error_rate=0.01,itl_p50_ms=20"]) == {
        "ttft_p90_ms": 500.0, "error_rate": 0.01, "itl_p50_ms": 20.0}


@pytest.mark.parametrize(("values", "said"), [
    (["ttft_ms=5", "ttft_ms=6"], "given twice (5 and 6)"),
    (["ttft_ms"], "expected NAME=NUMBER"),
    (["ttft_ms=fast"], "'fast' is not a number"),
])
def test_malformed_items(values, said):
    with pytest.raises(ValueError, match=said.replace("(", r"\(").replace(")", r"\)")):
        items(values)


def test_each_command_names_the_other_vocabulary():
    with pytest.raises(ValueError, match="capacity search; the report's goodput bounds each"):
        request_slo(["ttft_p90_ms=500"])
    with pytest.raises(ValueError, match="did you mean ttft_ms"):
        request_slo(["ttft_m=500"])
    with pytest.raises(ValueError, match="e.g. ttft_p90_ms"):
        level_slos(["ttft_ms=500"])


def test_report_keeps_every_repeated_bound(tmp_path, capsys):
    from analysis.synthetic import synthetic_sweep

    sweep = synthetic_sweep(tmp_path / "s", [1], trials_per_level=4, requests_per_trial=2)
    assert main(["report", str(sweep), "--out", str(tmp_path / "r"), "--no-plots",
                 "--slo", "ttft_ms=500", "--slo", "e2e_ms=30000,itl_ms=50"]) == 0
    written = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert written["slo"] == {"ttft_ms": 500.0, "itl_ms": 50.0, "e2e_s": 30.0}


def test_capacity_takes_the_same_format(capsys):
    with pytest.raises(SystemExit):
        main(["capacity", "--profile", "cpu-mocker", "--slo", "ttft_ms=500"])
    assert "e.g. ttft_p90_ms" in capsys.readouterr().err


def test_building_the_cli_parser_does_not_import_pandas():
    # Every CLI call builds the whole parser (capacity's --tier help quotes the default tiers);
    # pandas costs about a CPU-second to import, paid by `check`, `serve` and every refusal.
    import subprocess
    import sys

    probe = ("import sys; from bankbench.cli import build_parser; build_parser(); "
             "print('pandas' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "False"
