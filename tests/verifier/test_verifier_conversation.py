"""The verifier on conversation-mode trials: `turns` in reward.json, the `conversation` object
of tsq.json, both read from the log the real bank wrote; single-turn trials keep turns 1.0."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
from verifier_harness import BANK_FIXTURES, BANK_SCRIPT, VALID_ARGUMENTS, Trial

from contracts.reward import Reward
from contracts.tsq import TsqDetails

GOALS = ["Find out how much money is in my checking account",
         "Move $200 from account 12 to account 34",
         "Show my recent transactions"]


@pytest.fixture
def talk(trial: Trial) -> Trial:
    """The fixture trial made a conversation-mode task: its spec, and a bank with a brief."""
    (trial.tests_dir / "conversation.json").write_text('{"mode": "conversation", '
                                                       '"max_turns": 10}')
    app = trial.root / "app"
    shutil.copytree(BANK_FIXTURES, app)
    persona = {"name": "A", "age": 30, "occupation": "x", "personality_traits": ["calm"],
               "tone": "polite", "detail_level": "moderate"}
    (app / "customer.json").write_text(json.dumps({
        "scenario_id": "banking-003", "persona": persona, "first_message": "Hello.",
        "goals": GOALS, "max_turns": 10}))
    return trial


def bank(trial: Trial, *argv: str) -> dict:
    env = dict(os.environ, BANK_DIR=str(trial.root / "app"), BANK_INTENTS=str(trial.intents))
    env.pop("BANK_ATTEMPT", None)
    done = subprocess.run([trial.python, str(BANK_SCRIPT), *argv], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def call(trial: Trial, tool: str, *extra: str) -> None:
    bank(trial, "call", tool, json.dumps(VALID_ARGUMENTS[tool]), *extra)


def test_turns_and_the_conversation_come_from_the_banks_log(talk: Trial) -> None:
    bank(talk, "say", "Hello, what can I do for you?")
    call(talk, "get_account_balance")
    bank(talk, "say", "Your balance is $20.")
    call(talk, "transfer_funds")
    bank(talk, "say", "Which account do you mean?")
    outcome = talk.verify()
    reward, details = Reward.model_validate(outcome.reward), TsqDetails.model_validate(
        outcome.details)
    assert reward.turns == 3.0
    assert reward.tsq == 1.0  # goals scored over the whole attempt, whatever the turn
    conversation = details.conversation
    assert conversation is not None
    assert (conversation.turns, conversation.ended, conversation.end_reason) == (3, False, None)
    assert conversation.goals_revealed == [0, 1] and conversation.customer_kind == "scripted"
    assert conversation.customer.startswith("scripted customer.py sha256:")
    assert conversation.max_turns == 10 and conversation.n_lines == 7
    assert [c.turn for c in details.attempts[0].calls] == [1, 2]


def test_the_scored_attempts_turns_only(talk: Trial) -> None:
    for _ in range(4):
        bank(talk, "say", "Done.")
    bank(talk, "say", "Hi", "--attempt", "2")
    call(talk, "get_account_balance", "--attempt", "2")
    bank(talk, "accept", "2")
    outcome = talk.verify()
    assert outcome.reward["turns"] == 1.0
    assert outcome.details["conversation"]["attempts"] == [1, 2]
    bank(talk, "accept", "1")
    again = talk.verify()
    assert again.reward["turns"] == 4.0
    assert again.details["conversation"]["end_reason"] == "satisfied"
    assert again.details["conversation"]["goals_revealed"] == [0, 1, 2]


def test_a_conversation_task_never_spoken_in_has_no_turns(talk: Trial) -> None:
    call(talk, "get_account_balance")
    outcome = talk.test_sh()  # through test.sh: it passes the conversation log along
    assert outcome.reward["turns"] == 0.0
    assert outcome.details["conversation"]["log"]["exists"] is False


def test_single_turn_tasks_keep_one_turn_whatever_lies_beside_them(trial: Trial) -> None:
    trial.write_intents()
    trial.intents.with_name("conversation.jsonl").write_text(
        '{"seq": 1, "attempt": 1, "turn": 0, "speaker": "agent", "text": "x", "ts": 1}\n')
    outcome = trial.verify()
    assert outcome.reward["turns"] == 1.0 and "conversation" not in outcome.details


def test_unreadable_conversation_lines_are_counted_not_fatal(talk: Trial) -> None:
    bank(talk, "say", "Hello")
    log = talk.intents.with_name("conversation.jsonl")
    with log.open("a") as handle:
        handle.write('not json\n{"attempt": "1", "speaker": "agent"}\n[1]\n')
    outcome = talk.verify()
    assert outcome.reward["turns"] == 1.0
    assert outcome.details["conversation"]["log"]["corrupt_lines"] == 3


def test_a_conversation_log_past_the_banks_bound_scores_zero_unread(talk: Trial) -> None:
    """The conversation log is bounded as the intents log is: more lines than the bank writes
    are not parsed, and the trial scores 0 with the reason."""
    from contracts.intents import MAX_LOG_LINES

    call(talk, "get_account_balance")
    line = json.dumps({"seq": 1, "attempt": 1, "turn": 0, "speaker": "customer", "text": "x",
                       "ts": 1.0})
    talk.intents.with_name("conversation.jsonl").write_text((line + "\n") * (MAX_LOG_LINES + 1))
    out = talk.verify()
    assert out.returncode == 0 and set(out.reward.values()) == {0.0}
    assert f"more than {MAX_LOG_LINES} lines" in out.details["reason"]
