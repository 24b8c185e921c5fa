"""Beside TSQ, the gold-perfect agent's score: from the dataset's own gold, or "not measured".

Tasks are built by the real builder from the bundled sample (which has gold) and from a copy
of it without its gold; the trials are hand-made, pointing at those tasks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from analysis.markdown import fmt
from analysis.report import write_report
from analysis.summary import summarize
from analysis.tables import load
from tasks.banking import sample
from tasks.banking.build import build_tasks
from tests.support import quality_jobs
from tests.support.taskdata import sample_rows, write_hub_layout

N = 6


def built(out: Path, source: str) -> tuple[Path, list[str]]:
    summary = build_tasks(source, out, labels="intent", limit=N, log=lambda line: None)
    return out, summary.scenario_ids


def gold_perfect_by_hand(task: Path) -> float:
    """TSQ of the sample's gold calls against the task's expected tools, written out here
    (set F1 of the normalised names) rather than read from what the builder stored."""
    expected = json.loads((task / "tests" / "expected.json").read_text())
    gold = json.loads(sample.GOLD_GOALS_PATH.read_text())[task.name]["goals"]
    called = {g["tools"][0].replace("_", "").lower() for g in gold if g.get("tools")}
    wanted = {t.replace("_", "").lower() for t in expected["expected_tools"]}
    if not called and not wanted:
        return 1.0
    hits = len(called & wanted)
    return 0.0 if not hits else 2 * hits / (len(called) + len(wanted))


def test_a_sample_report_prints_the_samples_gold_perfect_tsq(tmp_path):
    tasks, ids = built(tmp_path / "tasks", "sample")
    job = quality_jobs.job(tmp_path / "job", {s: [0.5, 1.0] for s in ids}, tasks_dir=tasks)
    row = summarize(load(job)).iloc[0]
    expected = float(np.mean([gold_perfect_by_hand(tasks / s) for s in ids]))
    assert row["gold_perfect_tsq_mean"] == pytest.approx(expected)
    assert row["gold_perfect_tsq_ci_low"] <= expected <= row["gold_perfect_tsq_ci_high"]
    assert row["gold_perfect"] == f"bundled sample gold (gold_goals.json), {N} scenarios"
    text = write_report(job, out=tmp_path / "r", draw=False).read_text()
    quality = text.split("## Tool selection quality")[1].split("\n## ")[0]
    assert f"| {fmt(expected)} [" in quality  # the gold-perfect column, with its interval
    assert "ceiling" not in text.lower()
    assert "| hidden: labels not gold |" not in quality  # gold exists: solved is shown


def test_a_dataset_without_gold_prints_not_measured(tmp_path):
    copy = write_hub_layout(tmp_path / "data", sample_rows())  # the sample's rows, no gold
    tasks, ids = built(tmp_path / "tasks", str(copy))
    assert all(json.loads((tasks / s / "tests" / "expected.json").read_text())["gold_perfect"]
               is None for s in ids)
    job = quality_jobs.job(tmp_path / "job", {s: [0.5, 1.0] for s in ids}, tasks_dir=tasks)
    row = summarize(load(job)).iloc[0]
    assert row["gold_perfect"] == "not measured" and np.isnan(row["gold_perfect_tsq_mean"])
    text = write_report(job, out=tmp_path / "r", draw=False).read_text()
    quality = text.split("## Tool selection quality")[1].split("\n## ")[0]
    assert "| not measured |" in quality
    # No gold and a labeller's labels: the all-or-nothing figures are hidden, not printed.
    assert "| hidden: labels not gold |" in quality


def test_a_directory_with_gold_has_it_computed(tmp_path):
    copy = write_hub_layout(tmp_path / "data", sample_rows())
    shutil.copy(sample.GOLD_GOALS_PATH, copy / "gold_labels.json")
    tasks, ids = built(tmp_path / "tasks", str(copy))
    for s in ids:
        stored = json.loads((tasks / s / "tests" / "expected.json").read_text())["gold_perfect"]
        assert stored["gold"] == "gold_labels.json of data/"
        assert stored["tsq"] == pytest.approx(gold_perfect_by_hand(tasks / s))
