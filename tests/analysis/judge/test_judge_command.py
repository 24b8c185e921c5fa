"""`bankbench judge` as a user meets it: a dead or wrong judge endpoint is one line before any
trial is judged; a trial whose verdict failed is printed with its reason; a pass that failed
everywhere is never named as the report's judge."""

from __future__ import annotations

from datetime import UTC, datetime

from analysis.judge.figures import NO_JUDGE, level_judge
from analysis.synthetic import write_job, write_trial
from analysis.tables import load
from bankbench.commands.judge import _with_reasons
from contracts.judge import JUDGE_DIR, JudgeRecord, JudgeSample, MetricSummary, record_name
from tests.support.cli import assert_one_line_error, bankbench, closed_port


def _failed_verdict(trial, error: str) -> None:
    record = JudgeRecord(
        trial=trial.name, scenario_id=trial.name.split("__")[0], prompt_version="session-v1",
        prompt_sha256="ab" * 32, model="judge/m", base_url="http://x/v1", temperature=0.0,
        samples_requested=1, samples=[JudgeSample(status="error", error=error)],
        status="error", judged_at=datetime.now(UTC),
        tool_selection_quality=MetricSummary(), action_completion=MetricSummary())
    (trial / JUDGE_DIR).mkdir(exist_ok=True)
    (trial / JUDGE_DIR / record_name("session-v1", "judge/m")).write_text(
        record.model_dump_json())


def test_a_dead_judge_endpoint_is_one_line_and_judges_nothing(tmp_path):
    job = write_job(tmp_path / "job", 1)
    trial = write_trial(job, "banking-000__a", scenario_id="banking-000", rewards={"tsq": 1.0},
                        agent_status={"status": "ok"})
    url = f"http://127.0.0.1:{closed_port()}/v1"
    done = bankbench("judge", str(job), "--base-url", url, "--model", "m")
    line = assert_one_line_error(done, f"{url}/models", "no trial was judged")
    assert "cannot reach" in line
    assert not (trial / JUDGE_DIR).exists()


def test_each_failed_trial_is_printed_with_its_reason(tmp_path, capsys):
    job = write_job(tmp_path / "job", 1)
    trial = write_trial(job, "banking-000__a", scenario_id="banking-000", rewards={"tsq": 1.0})
    _failed_verdict(trial, "JudgeHTTPError: HTTP 404: model not found")
    log = _with_reasons(job)
    log("[1/2] banking-000__a: error")
    log("[2/2] banking-001__b: ok (TSQ 1.00, AC 1.00)")
    err = capsys.readouterr().err.splitlines()
    assert err == ["  [1/2] banking-000__a: error — JudgeHTTPError: HTTP 404: model not found",
                   "  [2/2] banking-001__b: ok (TSQ 1.00, AC 1.00)"]


def test_a_failed_pass_is_not_named_as_the_judge(tmp_path):
    job = write_job(tmp_path / "job", 1)
    trial = write_trial(job, "banking-000__a", scenario_id="banking-000", rewards={"tsq": 1.0},
                        agent_status={"status": "ok"})
    _failed_verdict(trial, "JudgeHTTPError: ConnectError")
    tables = load(job)
    row = level_judge(tables.trials, tables.jobs).iloc[0]
    assert row["judge"] == NO_JUDGE
