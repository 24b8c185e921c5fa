"""The judge's parts without a server: the strict answer schema, verdict files read into
per-level figures (clustered by scenario, unusable verdicts counted apart), and a clear error
for a missing key."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from analysis.judge.client import parse_answer
from analysis.judge.figures import NO_JUDGE, level_judge
from analysis.judge.prompt import STRICT_VERSION, load_prompt
from analysis.judge.run import JudgeOptions, judge_path
from analysis.metrics.base import cluster_bootstrap_mean_ci
from analysis.synthetic import write_job, write_trial
from analysis.tables import load
from contracts.judge import (
    JUDGE_DIR,
    JudgeAnswer,
    JudgeRecord,
    JudgeSample,
    MetricSummary,
    record_name,
)

GOOD = ('{"tool_selection_quality": {"score": 0.5, "rationale": "a"}, '
        '"action_completion": {"score": 1, "rationale": "b"}}')


@pytest.mark.parametrize(("text", "status"), [
    (GOOD, "ok"),
    ("Verdict:\n```json\n" + GOOD + "\n```", "ok"),
    (GOOD.replace("0.5", "1.5"), "unparseable"),           # score outside [0, 1]
    (GOOD.replace('"action_completion"', '"completion"'), "unparseable"),
    ("the agent did well", "unparseable"),
    ("", "unparseable"),
])
def test_answers_outside_the_schema_are_unparseable_not_zero(text, status):
    sample = parse_answer(text)
    assert sample.status == status
    if status == "ok":
        assert (sample.tool_selection_quality.score, sample.action_completion.score) == (0.5, 1)
    else:
        assert sample.tool_selection_quality is None and sample.raw == text[:2000]


def test_the_prompt_is_a_stored_file_with_a_stable_hash():
    prompt = load_prompt()
    assert prompt.version == "session-v2" and len(prompt.sha256) == 64
    assert prompt.sha256 == load_prompt("session-v2").sha256
    # The all-or-nothing action completion stands beside the partial one, as its own version.
    strict = load_prompt(STRICT_VERSION)
    assert strict.sha256 != prompt.sha256 and "all or nothing" in strict.text
    assert "partial credit" in prompt.text and "partial credit" not in strict.text
    assert load_prompt("session-v1").version == "session-v1"  # old verdicts stay readable
    with pytest.raises(ValueError, match="judge prompt 'v0' not found"):
        load_prompt("v0")


def _verdict(trial: Path, scenario: str, tsq: float | None, ac: float | None,
             model: str = "judge/m") -> None:
    ok = tsq is not None
    sample = (JudgeSample(status="ok", tool_selection_quality=JudgeAnswer(score=tsq, rationale=""),
                          action_completion=JudgeAnswer(score=ac, rationale=""))
              if ok else JudgeSample(status="unparseable", raw="?"))
    record = JudgeRecord(
        trial=trial.name, scenario_id=scenario, prompt_version="session-v1",
        prompt_sha256="ab" * 32, model=model, base_url="http://x/v1", temperature=0.0,
        samples_requested=1, samples=[sample], status="ok" if ok else "unparseable",
        judged_at=datetime.now(UTC),
        tool_selection_quality=MetricSummary(mean=tsq, std=0.0, n=int(ok)),
        action_completion=MetricSummary(mean=ac, std=0.0, n=int(ok)))
    (trial / JUDGE_DIR).mkdir(exist_ok=True)
    (trial / JUDGE_DIR / record_name("session-v1", model)).write_text(record.model_dump_json())


def test_level_figures_cluster_by_scenario_and_leave_unparseable_out(tmp_path):
    job = write_job(tmp_path / "job", 2)
    scores = {("banking-000", 0): (1.0, 0.5), ("banking-000", 1): (0.8, 0.5),
              ("banking-001", 0): (0.2, 0.0), ("banking-002", 0): (None, None)}
    for (scenario, repeat), (tsq, ac) in scores.items():
        trial = write_trial(job, f"{scenario}__{repeat}", scenario_id=scenario,
                            rewards={"tsq": 1.0})
        _verdict(trial, scenario, tsq, ac)
    tables = load(job)
    row = level_judge(tables.trials, tables.jobs).iloc[0]
    assert row["judge"].startswith("judge/m (prompt session-v1, sha256 abababababab")
    assert (row["judge_n"], row["judge_unparseable"]) == (3, 1)
    expected = cluster_bootstrap_mean_ci(np.array([1.0, 0.8, 0.2]),
                                         np.array(["banking-000", "banking-000", "banking-001"]))
    assert (row["judge_tsq_mean"], row["judge_tsq_ci_low"], row["judge_tsq_ci_high"]) == \
        pytest.approx(expected)
    assert row["judge_ac_mean"] == pytest.approx(1 / 3)


def test_a_job_without_verdicts_says_no_judge(tmp_path):
    job = write_job(tmp_path / "job", 1)
    write_trial(job, "banking-000__0", scenario_id="banking-000", rewards={"tsq": 1.0})
    tables = load(job)
    row = level_judge(tables.trials, tables.jobs).iloc[0]
    assert row["judge"] == NO_JUDGE and row["judge_n"] == 0 and np.isnan(row["judge_tsq_mean"])


def test_a_named_key_variable_that_is_unset_is_a_one_line_error(tmp_path, monkeypatch):
    monkeypatch.delenv("BANKBENCH_NO_SUCH_KEY", raising=False)
    options = JudgeOptions(base_url="http://127.0.0.1:9/v1", model="m",
                           api_key_env="BANKBENCH_NO_SUCH_KEY")
    with pytest.raises(ValueError, match="BANKBENCH_NO_SUCH_KEY: the variable is not set"):
        judge_path(tmp_path, options)
