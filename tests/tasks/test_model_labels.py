"""`--labels model` against the real Dynamo frontend + mocker, its answers scripted by a
response-replay trace: labels per goal, the reviewable file, the review loop back through
`--labels file:`, a bad answer named, and the key never written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from contracts.expected import Expected, LabelsFile
from tasks.banking.dataset import load
from tasks.banking.labels import LabelsError, label_scenarios
from tasks.banking.labels.llm import ModelOptions, parse_answer

pytestmark = pytest.mark.dynamo
SAMPLE = load("sample")
SECRET = "sk-test-never-on-disk-5f1e"


def _answer(goals: list[tuple[list[str], str]]) -> str:
    return json.dumps({"goals": [
        {"index": i, "tools": tools, "no_tool": not tools, "reason": reason}
        for i, (tools, reason) in enumerate(goals, start=1)]})


ANSWERS = [
    _answer([(["get_account_balance"], "balance of checking"),
             (["transfer_funds"], "between own accounts"),
             (["schedule_bill_payment"], "a utility biller"),
             ([], "pretend: no alert tool fits")]),
    "Sure! Here are the labels:\n```json\n" + _answer(
        [(["freeze_card"], "stop the card"),
         (["get_transaction_history", "get_account_balance"], "look at recent purchases"),
         (["dispute_transaction"], "unrecognised charge"),
         (["request_replacement_card"], "new card"),
         (["update_contact_details"], "email"),
         (["find_branch_or_atm"], "branch by zip")]) + "\n```",
]


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    from bankbench.serve import api, replay

    root = tmp_path_factory.mktemp("labels-stack")
    trace = replay.write_trace(root / "trace.jsonl", {
        "labels": ANSWERS,
        "bad": ["I cannot help with that."],
        "short": [_answer([(["freeze_card"], "x")])],
    })
    with api.running("cpu-mocker", state_dir=root / "state",
                     options={"speedup_ratio": 10, "replay_trace": str(trace)}) as state:
        yield state


def _options(stack, session: str, out: Path | None = None) -> ModelOptions:
    return ModelOptions(endpoint=stack.base_url, model=stack.model, out=out,
                        key_env="BANKBENCH_TEST_LABELS_KEY",
                        nvext_annotations=[f"output_replay_id:{session}:{{index}}"])


def test_the_model_labels_goals_and_writes_a_file_to_review(stack, tmp_path, monkeypatch):
    monkeypatch.setenv("BANKBENCH_TEST_LABELS_KEY", SECRET)
    out = tmp_path / "review.json"
    labels = label_scenarios("model", SAMPLE, SAMPLE.scenarios[:2],
                             _options(stack, "labels", out))
    assert labels.method == "model" and labels.version == f"1+{stack.model}"
    first = labels.scenarios["banking-000"]
    assert [g.tools for g in first.goals] == [["get_account_balance"], ["transfer_funds"],
                                ["schedule_bill_payment"], []]
    assert [g.no_tool for g in first.goals] == [False, False, False, True]
    assert first.expected_tools == ["get_account_balance", "transfer_funds",
                                    "schedule_bill_payment"]
    second = labels.scenarios["banking-001"]  # prose and a code fence around the JSON
    assert second.goals[1].tools == ["get_transaction_history", "get_account_balance"]
    document = LabelsFile.model_validate_json(out.read_text())
    entry = document.scenarios["banking-000"].goals[3]
    assert entry.no_tool and entry.reason == "pretend: no alert tool fits"
    assert entry.goal == SAMPLE.scenarios[0].row.user_goals[3]
    assert SECRET not in out.read_text()


def test_a_reviewed_file_builds_through_the_cli(stack, tmp_path):
    env = dict(os.environ, BANKBENCH_TEST_LABELS_KEY=SECRET, HARBOR_TELEMETRY="0")
    out = tmp_path / "tasks"
    build = [sys.executable, "-m", "bankbench", "tasks", "build", "--source", "sample",
             "--out", str(out), "--limit", "2"]
    done = subprocess.run(build + ["--labels", "model", "--labels-endpoint", stack.base_url,
                                   "--labels-model", stack.model,
                                   "--labels-key-env", "BANKBENCH_TEST_LABELS_KEY",
                                   "--labels-nvext-annotation", "output_replay_id:labels:{index}"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    review = tmp_path / "tasks.model-labels.json"
    assert f"--labels file:{review}" in done.stderr
    expected = Expected.model_validate_json((out / "banking-000/tests/expected.json").read_text())
    assert expected.labels.method == "model" and expected.goals[3].no_tool
    # The reviewer decides goal 4 is served after all, and rebuilds from the edited file.
    data = json.loads(review.read_text())
    data["scenarios"]["banking-000"]["goals"][3] = {
        "goal": SAMPLE.scenarios[0].row.user_goals[3], "tools": ["set_account_alert"],
        "reason": "reviewer: a low-balance text alert"}
    data["produced_by"] += "; reviewed"
    review.write_text(json.dumps(data))
    done = subprocess.run(build + ["--labels", f"file:{review}"], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    expected = Expected.model_validate_json((out / "banking-000/tests/expected.json").read_text())
    assert expected.labels.method == "file" and expected.labels.produced_by.endswith("reviewed")
    assert expected.goals[3].tools == ["set_account_alert"] and not expected.goals[3].no_tool
    assert expected.expected_tools[-1] == "set_account_alert"
    for path in [review, *out.rglob("*.json"), *out.rglob("*.toml")]:
        assert SECRET not in path.read_text()


@pytest.mark.parametrize(("session", "words"), [
    ("bad", "banking-000: the answer is not the JSON asked for"),
    ("short", r"banking-000: labelled goals \[1\], expected 1..4"),
])
def test_an_unusable_answer_names_the_scenario(stack, session, words):
    with pytest.raises(LabelsError, match=words):
        label_scenarios("model", SAMPLE, SAMPLE.scenarios[:1], _options(stack, session))


def test_unknown_tools_and_a_missing_endpoint_are_one_line_errors():
    goals = ["a", "b"]
    with pytest.raises(LabelsError, match="goal 2 names unknown tools teleport"):
        parse_answer(_answer([(["freeze_card"], ""), (["teleport"], "")]), goals,
                     {"freeze_card"}, "banking-009")
    options = ModelOptions(endpoint="http://127.0.0.1:9/v1", model="m", timeout_s=2)
    with pytest.raises(LabelsError, match="banking-000: http://127.0.0.1:9/v1: APIConnection"):
        label_scenarios("model", SAMPLE, SAMPLE.scenarios[:1], options)
