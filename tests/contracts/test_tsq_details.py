"""tsq.json as the real verifier writes it validates against `contracts.tsq.TsqDetails`, and
analysis reads per-attempt TSQ through that model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from analysis.files import read_attempt_scores
from contracts.tsq import TsqDetails

VERIFY = Path(__file__).resolve().parents[2] / "tasks/banking/template/tests/verify.py"
EXPECTED = {
    "scenario_id": "banking-000",
    "expected_tools": ["get_account_balance", "freeze_card"],
    "goals": [{"index": 0, "text": "balance", "tools": ["get_account_balance"]},
              {"index": 1, "text": "freeze", "tools": ["freeze_card"]}],
}


def _verify(tmp_path: Path, intents: list[dict]) -> Path:
    (tmp_path / "expected.json").write_text(json.dumps(EXPECTED))
    log = tmp_path / "intents.jsonl"
    log.write_text("".join(json.dumps(line) + "\n" for line in intents))
    trial = tmp_path / "trial"
    (trial / "verifier").mkdir(parents=True)
    subprocess.run([sys.executable, str(VERIFY), "--expected", str(tmp_path / "expected.json"),
                    "--intents", str(log), "--out-dir", str(trial / "verifier")], check=True,
                   capture_output=True)
    return trial


def _call(seq: int, attempt: int, tool: str) -> dict:
    return {"seq": seq, "attempt": attempt, "tool": tool, "arguments": {}, "valid": True,
            "errors": [], "ts": 0}


def test_the_verifiers_output_is_a_tsq_details(tmp_path):
    trial = _verify(tmp_path, [_call(1, 1, "get_account_balance"), _call(2, 2, "freeze_card"),
                               _call(3, 2, "get_account_balance"), {"accept": 2, "ts": 0}])
    details = TsqDetails.model_validate_json((trial / "verifier/tsq.json").read_text())
    assert details.scored_attempt == 2 and details.reward["tsq"] == 1.0
    assert details.tsq_by_attempt() == {1: 2 / 3, 2: 1.0}
    assert [g.covered for g in details.goals] == [True, True]
    scores = read_attempt_scores(trial, issues := [])
    assert scores is not None and issues == []
    assert scores.by_attempt == {1: 2 / 3, 2: 1.0} and scores.scored_attempt == 2


def test_a_zero_score_without_calls_still_validates(tmp_path):
    trial = _verify(tmp_path, [])
    details = TsqDetails.model_validate_json((trial / "verifier/tsq.json").read_text())
    assert details.attempts == [] and "made no bank call" in details.reason


def test_extra_fields_from_newer_verifiers_are_kept_and_bad_files_reported(tmp_path):
    details = TsqDetails.model_validate({"verifier_version": "9", "reward": {"tsq": 1.0},
                                         "reason": None, "per_goal": {"served": 3}})
    assert details.model_extra == {"per_goal": {"served": 3}}
    trial = tmp_path / "t"
    (trial / "verifier").mkdir(parents=True)
    (trial / "verifier/tsq.json").write_text(json.dumps({"attempts": "three"}))
    issues: list = []
    assert read_attempt_scores(trial, issues) is None
    assert "not a valid TsqDetails: attempts" in str(issues[0])
