"""`bankbench report` and `write_report`: every file written, comparisons, clear errors."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from analysis.metrics.goodput import SLO
from analysis.progress import running_summary
from analysis.report import default_out_dir, write_report
from analysis.synthetic import synthetic_sweep
from bankbench.cli import main

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory):
    root = tmp_path_factory.mktemp("sweeps")
    base = synthetic_sweep(root / "base", [1, 2, 4], trials_per_level=6, requests_per_trial=3,
                           seed=1)
    other = synthetic_sweep(root / "other", [1, 2, 4], trials_per_level=6, requests_per_trial=3,
                            seed=2)
    return base, other


@pytest.fixture(scope="module")
def sweep_report(sweeps):
    base, other = sweeps
    return write_report(base, compare=[other], slo=SLO(ttft_ms=60))


def test_sweep_report_writes_every_file(sweep_report, sweeps):
    out = sweep_report.parent
    assert out == sweeps[0]  # a sweep's report lives in the sweep directory
    for name in ("report.md", "summary.csv", "summary.json", "trials.csv", "scenarios.csv",
                 "requests.csv", "requests.jsonl"):
        assert (out / name).stat().st_size > 0, name
    for name in ("latency_vs_concurrency", "throughput_vs_concurrency", "tsq_vs_concurrency",
                 "pareto", "ttft_hist", "itl_hist", "tsq_vs_ttft", "concurrency_achieved"):
        assert (out / "plots" / f"{name}.png").read_bytes()[:8] == PNG, name
    requests = pd.read_csv(out / "requests.csv")
    assert len(requests) == 2 * 3 * 6 * 3  # two sources × levels × trials × requests
    assert len((out / "requests.jsonl").read_text().splitlines()) == len(requests)


def test_summary_json_holds_rows_definitions_and_deltas(sweep_report):
    payload = json.loads((sweep_report.parent / "summary.json").read_text())
    assert {(r["source"], r["level"]) for r in payload["summary"]} == {
        (s, lv) for s in ("base", "other") for lv in (1, 2, 4)}
    units = {m["key"]: m["unit"] for m in payload["metrics"]}
    assert units["ttft_ms"] == "ms" and units["output_token_throughput"] == "tokens/s"
    assert payload["slo"]["ttft_ms"] == 60
    deltas = [c for c in payload["comparison"] if c["metric"] == "tsq_mean"]
    assert {c["level"] for c in deltas} == {"c1", "c2", "c4"}
    for c in deltas:
        assert c["delta"] == pytest.approx(c["value"] - c["baseline"])


def test_report_markdown_sections(sweep_report):
    text = sweep_report.read_text()
    for heading in ("## Trials", "## Latency", "## Throughput and concurrency",
                    "## Tool selection quality", "## Goodput (SLO ttft_ms=60)",
                    "## Self-evaluation", "## Comparison against base", "## Figures",
                    "## Metric definitions"):
        assert heading in text, heading
    assert "![Latency percentiles vs concurrency](plots/latency_vs_concurrency.png)" in text


def test_job_report_shows_failures_and_problems(partial_job_dir, known_job_dir, tmp_path):
    report = write_report(known_job_dir, out=tmp_path / "r1")
    text = report.read_text()
    assert "| known-job | 2 | 4 | 1 | 1 | 1 | 1 | 0 | 0 | 2 | 2 |" in text  # status counts row
    assert "EnvironmentStartTimeoutError" in text and "connection refused" in text
    text = write_report(partial_job_dir, out=tmp_path / "r2").read_text()
    assert "Input problems (3)" in text and "truncated last line skipped" in text
    assert default_out_dir(known_job_dir) == known_job_dir.parent / "known-job-report"


def test_cli_report_and_its_errors(known_job_dir, tmp_path, capsys):
    assert main(["report", str(known_job_dir), "--out", str(tmp_path / "o"), "--no-plots",
                 "--slo", "ttft_ms=25"]) == 0
    assert (tmp_path / "o" / "report.md").exists()
    assert not (tmp_path / "o" / "plots").exists()
    assert main(["report", str(known_job_dir), "--slo", "ttft=1"]) == 2
    assert "--slo 'ttft' is not one of ttft_ms" in capsys.readouterr().err
    assert main(["report", str(tmp_path / "missing")]) == 2
    assert "missing: no such directory" in capsys.readouterr().err


def test_running_summary(partial_job_dir, known_job_dir):
    s = running_summary(partial_job_dir)
    assert s["trials_total"] == 6
    assert (s["trials_done"], s["trials_running"]) == (3, 1)
    assert s["tsq_mean"] == pytest.approx(0.5)
    assert s["ttft_ms_mean"] == pytest.approx((12 + 14 + 16) / 3)
    s = running_summary(known_job_dir)
    assert s["trials_errored"] == 1 and s["ttft_ms_mean"] == pytest.approx(15.0)


def test_example_notebook_is_clean_and_runs(tmp_path, monkeypatch):
    from pathlib import Path

    path = Path(__file__).parents[2] / "analysis" / "notebooks" / "example.ipynb"
    nb = json.loads(path.read_text())
    assert nb["nbformat"] == 4
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code and all(c["outputs"] == [] and c["execution_count"] is None for c in code)
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for i, cell in enumerate(code):
        source = "".join(cell["source"]) + ('\nJOB = "demo"' if i == 0 else "")
        exec(compile(source, str(path), "exec"), namespace)
    assert len(namespace["summary"]) == 3
    assert namespace["ax"].get_xlabel() == "Mean TTFT of the trial's requests (ms)"


def test_compare_without_an_interval_calls_nothing():
    """A bare delta (no paired interval) is shown but never called better or worse."""
    from analysis.compare import compare_table

    summary = pd.DataFrame({"source": ["a", "b"], "level": [4, 4],
                            "ttft_ms_p50": [10.0, 12.0], "tsq_mean": [0.8, 0.9],
                            "itl_ms_p50": [5.0, float("nan")], "error_rate": [0.1, 0.1]})
    rows = compare_table(summary).set_index("metric")
    assert rows.loc["ttft_ms_p50", "delta"] == pytest.approx(2.0)
    assert rows.loc["ttft_ms_p50", "delta_pct"] == pytest.approx(20.0)
    assert rows.loc["tsq_mean", "delta"] == pytest.approx(0.1)
    assert rows["better"].isna().all() and (rows["verdict"] == "").all()


def test_job_without_trials_yet_still_reports(tmp_path):
    from analysis.synthetic import write_job

    job = write_job(tmp_path / "fresh", n_concurrent=3, finished=False)
    text = write_report(job).read_text()
    assert "| fresh | 3 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 |" in text


def test_baseline_is_the_first_path_not_the_first_name(sweeps, tmp_path):
    base, other = sweeps  # "base" sorts before "other": compare the other way round
    write_report(other, out=tmp_path / "r", compare=[base], draw=False)
    payload = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert payload["summary"][0]["source"] == "other"
    assert {c["source"] for c in payload["comparison"]} == {"base"}
