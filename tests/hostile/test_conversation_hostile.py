"""Conversation mode on the real `harbor run` with LocalEnvironment: the oracle holds a whole
conversation with the scripted customer and scores 1; a cheating agent cannot read the
customer's brief, cannot write the conversation log, and its forged settings raise neither
its score nor its turns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from harbor.models.trial.result import TrialResult

from contracts.conversation import ConversationEntry
from contracts.reward import SCORE_KEYS
from tests.support.hostile_trials import attacks, honest_reward, result, scored, trials
from tests.support.sample_job import run_sample_job

pytestmark = [pytest.mark.harbor, pytest.mark.timeout(600)]

HERE = Path(__file__).resolve().parent
TASK = "banking-002"  # four goals


@pytest.fixture(scope="module")
def job(tmp_path_factory) -> Path:
    return run_sample_job(
        tmp_path_factory.mktemp("conversation"), "conversation", (TASK,),
        agents=[{"import_path": "conversation_agents:ConversationCheater"}, {"name": "oracle"}],
        n_concurrent=2, pythonpath=(HERE,), timeout=500,
        build={"mode": "conversation", "max_turns": 8},
    )


def lines(trial: Path) -> list[ConversationEntry]:
    text = (trial / "agent/conversation.jsonl").read_text()
    return [ConversationEntry.model_validate_json(line) for line in text.splitlines()]


def task_dir(job: Path) -> Path:
    return Path(json.loads((job.parent.parent / "job.json").read_text())["tasks"][0]["path"])


def test_the_oracle_holds_the_whole_conversation(job):
    trial = trials(job)[("oracle", TASK)]
    rewards = TrialResult.model_validate_json((trial / "result.json").read_text())
    assert rewards.exception_info is None
    values = rewards.verifier_result.rewards
    assert {k: values[k] for k in SCORE_KEYS} == dict.fromkeys(SCORE_KEYS, 1.0)
    assert values["turns"] == 5.0  # a greeting, then "Done." until the goodbye (4 goals)
    talk = lines(trial)
    assert [e.speaker for e in talk] == ["customer"] + ["agent", "customer"] * 5
    assert talk[-1].ended and talk[-1].end_reason == "satisfied"
    details = json.loads((trial / "verifier/tsq.json").read_text())
    assert details["conversation"]["goals_revealed"] == [0, 1, 2, 3]
    calls = [json.loads(x) for x in (trial / "agent/intents.jsonl").read_text().splitlines()]
    assert calls and all(call["turn"] == 1 for call in calls if "tool" in call)


def test_the_brief_stays_out_of_reach(job):
    trial = trials(job)[("conversation-cheater", TASK)]
    done = attacks(trial)
    goals = json.loads((task_dir(job) / "environment/customer.json").read_text())["goals"]
    seen = "".join(a["stdout"] for a in done)
    assert not any(goal in seen for goal in goals)
    assert done[0]["return_code"] != 0 and "Permission denied" in done[0]["stderr"]
    assert "-rw-------" in done[-1]["stdout"]  # customer.json: root's alone


def test_the_log_cannot_be_forged_and_forged_settings_earn_nothing(job):
    trial = trials(job)[("conversation-cheater", TASK)]
    done = attacks(trial)
    assert all(a["return_code"] != 0 for a in done[2:6]), done[2:6]
    # Its own customer's settings are refused: nothing reached its listener, no turn taken.
    assert "come from the harness" in done[7]["stderr"], done[7]
    assert "Stay in character" not in done[7]["stdout"]
    assert "All done, thanks" not in done[7]["stdout"]
    log = trial / "agent/conversation.jsonl"
    assert not log.is_symlink() and log.stat().st_uid == 0
    talk = lines(trial)
    # Only the two honest says (attacks 6 and 9) are there, and the real customer answered.
    assert [e.text for e in talk if e.speaker == "agent"] == [
        "Hello, how can I help?", "Done, what else?"]
    assert [e.goal_index for e in talk if e.speaker == "customer"] == [None, 0, 1]
    rewards = result(trial).verifier_result.rewards
    assert rewards["turns"] == 2.0
    assert rewards == honest_reward(trial, task_dir(job))
    assert scored(trial)["tsq"] < 1.0
