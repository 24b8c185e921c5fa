"""`--compare` paired by scenario and level, runs of different labels refused (of different
modes stated), and the
provenance of TSQ (dataset, labels and their quality, mode, sample fallback) in the report."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from analysis.console import summary_table_from
from analysis.provenance import NOT_MEASURED, SAMPLE_FALLBACK, MixedRunsError
from analysis.report import write_report
from analysis.summary import summarize
from analysis.tables import load
from bankbench.cli import main
from tests.support import quality_jobs

SCENARIOS = [f"banking-{i:03d}" for i in range(20)]
DIFFICULTY = np.linspace(0.1, 0.9, len(SCENARIOS))  # scenarios differ far more than runs


def scores(shift, noise: float = 0.03, seed: int = 0) -> dict[str, list[float]]:
    """Two repeats per scenario: its difficulty + shift (per scenario) + a little noise."""
    rng = np.random.default_rng(seed)
    shifts = shift if isinstance(shift, list) else [shift] * len(SCENARIOS)
    return {s: [float(np.clip(d + sh + rng.normal(0, noise), 0, 1)) for _ in range(2)]
            for s, d, sh in zip(SCENARIOS, DIFFICULTY, shifts, strict=True)}


def verdicts(report) -> dict[tuple[str, str, str], str]:
    payload = json.loads((report.parent / "summary.json").read_text())
    return {(c["level"], c["source"], c["metric"]): c["verdict"] for c in payload["comparison"]}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    base = quality_jobs.sweep(root / "base", {1: scores(0.0, seed=1), 4: scores(0.0, seed=2)})
    # Level 1 as good as the baseline; level 4 better by 0.08 on every scenario.
    better = quality_jobs.sweep(root / "better", {1: scores(0.0, seed=3),
                                                  4: scores(0.08, seed=4)})
    # Same average, but ±0.15 scenario by scenario: noise, not a difference.
    noisy = quality_jobs.sweep(root / "noisy", {1: scores([0.15, -0.15] * 10, seed=5),
                                                4: scores([-0.15, 0.15] * 10, seed=6)})
    worse = quality_jobs.sweep(root / "worse", {1: scores(-0.08, seed=7),
                                                4: scores(-0.08, seed=8)})
    return base, better, noisy, worse


def test_paired_compare_calls_a_real_difference_and_not_noise(runs, tmp_path):
    base, better, noisy, worse = runs
    report = write_report(base, out=tmp_path / "r", compare=[better, noisy, worse], draw=False)
    called = verdicts(report)
    assert called[("c4", "better", "tsq_mean")] == "better"
    assert called[("c1", "better", "tsq_mean")] == "no clear difference"
    assert called[("c1", "noisy", "tsq_mean")] == "no clear difference"
    assert called[("c4", "noisy", "tsq_mean")] == "no clear difference"
    assert called[("c1", "worse", "tsq_mean")] == "worse"
    assert called[("c4", "worse", "tsq_infra0_mean")] == "worse"
    assert called[("c4", "better", "ttft_ms_p50")] == ""  # no interval, never called
    # Pairing is what makes 0.08 visible: the unpaired per-run intervals overlap.
    summary = pd.read_csv(report.parent / "summary.csv").set_index(["source", "level"])
    assert summary.loc[("better", 4), "tsq_ci_low"] < summary.loc[("base", 4), "tsq_ci_high"]
    rows = pd.DataFrame(json.loads((report.parent / "summary.json").read_text())["comparison"])
    row = rows[(rows["source"] == "better") & (rows["level"] == "c4")
               & (rows["metric"] == "tsq_mean")].iloc[0]
    assert row["n_paired"] == 20 and row["delta"] == pytest.approx(row["value"] - row["baseline"])
    assert 0 < row["delta_ci_low"] < 0.08 < row["delta_ci_high"] < 0.12
    text = report.read_text()
    assert "| c4 | tsq_mean | score 0–1 |" in text and "no clear difference" in text


def test_compare_pairs_only_the_scenarios_both_runs_have(tmp_path):
    a = quality_jobs.job(tmp_path / "a", {"banking-000": [0.2], "banking-001": [0.4],
                                          "banking-002": [0.6]})
    b = quality_jobs.job(tmp_path / "b", {"banking-000": [0.3], "banking-001": [0.5],
                                          "banking-009": [1.0]})
    report = write_report(a, out=tmp_path / "r", compare=[b], draw=False)
    rows = json.loads((report.parent / "summary.json").read_text())["comparison"]
    tsq = next(r for r in rows if r["metric"] == "tsq_mean")
    assert tsq["n_paired"] == 2 and tsq["delta"] == pytest.approx(0.1)


def labelled_job(root, name: str, **stub):
    tasks = quality_jobs.tasks(root / f"{name}-tasks", SCENARIOS[:3], **stub)
    return quality_jobs.job(root / name, {s: [0.5, 1.0] for s in SCENARIOS[:3]}, tasks_dir=tasks)


def test_mixed_labels_refused_unless_allowed(tmp_path, capsys):
    match = labelled_job(tmp_path, "match", labels="match@2")
    keyword = labelled_job(tmp_path, "keyword", labels="keyword@1")
    with pytest.raises(MixedRunsError, match=r"labels \(match: match@2; keyword: keyword@1\)"):
        write_report(match, out=tmp_path / "r0", compare=[keyword], draw=False)
    assert not (tmp_path / "r0").exists()  # nothing written
    args = ["report", str(match), "--compare", str(keyword), "--no-plots", "--out"]
    assert main([*args, str(tmp_path / "r1")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("bankbench report: --compare: the runs differ in labels")
    assert "--allow-mixed" in err[-1]
    assert main([*args, str(tmp_path / "r2"), "--allow-mixed"]) == 0
    text = (tmp_path / "r2" / "report.md").read_text()
    assert "Warning: runs compared with `--allow-mixed` differ in labels" in text
    # Same labels but another instruction mode: refused unless allowed, then stated as a
    # comparison of protocols rather than warned about as another measuring stick.
    first = labelled_job(tmp_path, "first", labels="match@2", mode="first-message")
    with pytest.raises(MixedRunsError, match=r"mode \(match: goals; first: first-message\) "
                       r"— a comparison of protocols"):
        write_report(match, out=tmp_path / "r3", compare=[first], draw=False)
    text = write_report(match, out=tmp_path / "r3", compare=[first], draw=False,
                        allow_mixed=True).read_text()
    assert "differ in mode (match: goals; first: first-message)" in text
    assert "Warning: runs compared with `--allow-mixed`" not in text
    same = labelled_job(tmp_path, "same", labels="match@2")
    write_report(match, out=tmp_path / "r4", compare=[same], draw=False)


def test_provenance_in_summary_rows_and_report_header(tmp_path):
    quality = {"heldout_micro_f1": 0.82, "heldout_goal_exact": 0.7, "measured_with": "gold v1"}
    measured = labelled_job(tmp_path, "measured", labels="match@2", label_quality=quality,
                            dataset_revision="abc123")
    row = summarize(load(measured)).iloc[0]
    assert (row["labels"], row["mode"], row["dataset_revision"]) == ("match@2", "goals", "abc123")
    assert row["dataset"] == "galileo-ai/agent-leaderboard-v2"
    assert row["dataset_source"] == "Hugging Face hub"
    assert row["label_heldout_f1"] == 0.82
    # Hub data has no gold: the method's held-out quality never stands in for this data's.
    assert row["gold_perfect"] == NOT_MEASURED and np.isnan(row["gold_perfect_tsq_mean"])
    assert row["judge"].startswith("none")
    text = write_report(measured, out=tmp_path / "r", draw=False).read_text()
    header = text.split("## Provenance")[0]
    assert "held-out micro F1 0.820, goals exact 0.700 (gold v1)" in header
    assert "| match@2 |" in header and "not on this data" in header
    plain = labelled_job(tmp_path, "plain", dataset_revision="sample-1")
    row = summarize(load(plain)).iloc[0]
    assert row["label_quality"] == NOT_MEASURED and np.isnan(row["gold_perfect_tsq_mean"])
    assert row["dataset_source"] == "bundled sample"


def test_sample_fallback_is_stated_in_the_report(tmp_path):
    sweep = quality_jobs.sweep(
        tmp_path / "sweep", {1: {"banking-000": [1.0], "banking-001": [0.0]}},
        dataset="sample@sample-1",
        dataset_fallback="DatasetError: the hub cannot be reached")
    row = summarize(load(sweep)).iloc[0]
    assert row["dataset_source"] == SAMPLE_FALLBACK and row["dataset_revision"] == "sample-1"
    report = write_report(sweep, draw=False)
    assert f"**Warning: the dataset is the {SAMPLE_FALLBACK}**" in report.read_text()
    # The terminal table a sweep ends with says it too, on its last line.
    last = summary_table_from(report.parent).splitlines()[-1]
    assert last.startswith(f"WARNING: dataset = {SAMPLE_FALLBACK}")


def latency_job(job_dir, shift_ms, seed: int, factor: float = 1.0):
    """12 scenarios × 2 trials × 3 calls; a scenario's calls take 20–240 ms (long prompts
    are slow) plus ±1 ms noise, times `factor`, plus `shift_ms` (a number, or a list per
    scenario)."""
    from analysis.synthetic import record, write_job, write_trial

    rng = np.random.default_rng(seed)
    shifts = shift_ms if isinstance(shift_ms, list) else [shift_ms] * 12
    write_job(job_dir, 2, n_total_trials=24)
    for i, shift in enumerate(shifts):
        scenario = f"banking-{i:03d}"
        for repeat in range(2):
            calls = [record(request_id=f"{i}-{repeat}-{n}", scenario_id=scenario,
                            ttft_ms=(20.0 * (i + 1) + rng.uniform(-1, 1)) * factor + shift,
                            e2e_ms=400.0 * factor + shift, completion_tokens=3)
                     for n in range(3)]
            write_trial(job_dir, f"{scenario}__{repeat}", scenario_id=scenario, records=calls,
                        rewards=quality_jobs.rewards(1.0), agent_status=quality_jobs.OK)
    return job_dir


def test_paired_compare_of_latency_percentiles(tmp_path):
    base = latency_job(tmp_path / "base", 0.0, seed=1)
    # 5 % slower on every call (a fixed +5 ms on scenarios run from the shortest to the
    # longest would be, in ratio, a trend through the run: what a wandering server shows)
    slower = latency_job(tmp_path / "slower", 0.0, seed=2, factor=1.05)
    noisy = latency_job(tmp_path / "noisy", [30.0, -30.0] * 6, seed=3)
    report = write_report(base, out=tmp_path / "r", compare=[slower, noisy], draw=False)
    called = verdicts(report)
    # one run a side: a drift of the server slower than a run would read as a difference,
    # so even a clear slowdown gets no latency verdict (several runs a side:
    # tests/analysis/test_compare_runs.py)
    for source, key in (("slower", "ttft_ms_p50"), ("slower", "e2e_ms_p99"),
                        ("noisy", "ttft_ms_p50")):
        assert called[("c2", source, key)] == "cannot tell", (source, key)
    # a share keeps a verdict on fewer blocks (analysis/metrics/longrun.py)
    assert called[("c2", "slower", "error_rate")] == "no clear difference"  # none failed
    assert called[("c2", "slower", "request_throughput")] == ""  # a window figure: no interval
    rows = pd.DataFrame(json.loads((report.parent / "summary.json").read_text())["comparison"])
    row = rows[(rows["source"] == "slower") & (rows["metric"] == "ttft_ms_p50")].iloc[0]
    assert "one run on a side" in row["power_note"]
    assert row["delta"] == pytest.approx(row["value"] - row["baseline"])
    assert row["delta_ci_low"] > 0 and row["n_paired"] == 12


def test_label_quality_says_what_is_known_of_these_labels(tmp_path):
    """Hub data has no gold: the cell says the labels' quality is unknown here, then the
    range over the held-out sets with each set's interval, never one set's figure alone."""
    from analysis.provenance import GOLD_HERE, UNKNOWN_HERE, label_quality
    from contracts.expected import LabelsQuality
    from tasks.banking.labels.sentence import QUALITY

    hub = labelled_job(tmp_path, "hub", labels="sentence@3", dataset_revision="abc123",
                       label_quality=QUALITY.model_dump())
    cell = summarize(load(hub)).iloc[0]["label_quality"]
    assert cell.startswith(UNKNOWN_HERE)
    f1s = [s.goal_f1 for s in QUALITY.sets]
    assert f"goal F1 {min(f1s):.2f}-{max(f1s):.2f} over {len(f1s)} held-out sets" in cell
    for s in QUALITY.sets:
        assert f"{s.gold_set} {s.goal_f1:.3f} [{s.goal_f1_low:.3f}, {s.goal_f1_high:.3f}]" in cell
    assert cell in write_report(hub, out=tmp_path / "r", draw=False).read_text()
    # Where the data has gold, the gold-perfect figures measure these very labels.
    assert label_quality(QUALITY, has_gold=True).startswith(GOLD_HERE)
    # A task written before per-set figures keeps its one figure, after the same caveat.
    old = LabelsQuality(heldout_micro_f1=0.5, heldout_goal_exact=0.4, measured_with="v1")
    assert label_quality(old, has_gold=False) == (
        f"{UNKNOWN_HERE}; elsewhere held-out micro F1 0.500, goals exact 0.400 (v1)")
