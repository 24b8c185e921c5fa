"""A conversation-mode judge request holds every turn: the real bank writes the conversation
(scripted customer) and the call log of a trial, the judge's reader and prompt build the
request from them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from analysis.files import Issue
from analysis.judge.prompt import STRICT_VERSION, load_prompt, messages
from analysis.trial_inputs import read_trial_inputs
from contracts.conversation import ConversationEntry
from tests.support.bank_harness import BANK_SCRIPT, FIXTURES, Bank, write_brief

GOALS = ["Find out how much money is in my checking account right now",
         "Move $800 from my savings into checking"]


def test_a_conversation_mode_judge_request_holds_every_turn(tmp_path: Path) -> None:
    folder = tmp_path / "app"
    shutil.copytree(FIXTURES, folder)
    write_brief(folder, GOALS)
    trial = tmp_path / "banking-000__abc"
    bank = Bank(bank_dir=folder, intents=trial / "agent" / "intents.jsonl")

    def run(*args: str) -> None:
        done = subprocess.run([sys.executable, str(BANK_SCRIPT), *args], env=bank.env(),
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr

    run("say", "Hello, how can I help you today?")
    run("call", "get_account_balance", '{"account_number": "00123", "account_type": "checking"}')
    run("say", "Your checking balance is ready. Which account should the money come from?")
    run("call", "transfer_funds",
        '{"from_account": "1", "to_account": "2", "amount": 800}')
    run("say", "Done: I moved $800. Anything else?")
    run("accept", "1")

    log = trial / "agent" / "conversation.jsonl"
    lines = [ConversationEntry.model_validate_json(raw) for raw in log.read_text().splitlines()]
    assert {e.speaker for e in lines} == {"customer", "agent"} and len(lines) >= 6
    issues: list[Issue] = []
    inputs = read_trial_inputs(trial, "banking-000", issues)
    for version in (load_prompt().version, STRICT_VERSION):
        request = messages(load_prompt(version), inputs)[1]["content"]
        positions = [request.index(f"{e.speaker} (turn {e.turn}): {e.text}") for e in lines]
        assert positions == sorted(positions)  # every line, in the order it was said
        # Each call sits after the customer line of the turn it was made on, before the agent's
        # next line (the agent's n-th message is logged on turn n-1, the answer on turn n).
        balance, transfer = request.index("call get_account_balance"), request.index(
            "call transfer_funds")
        by_turn = {(e.speaker, e.turn): p for e, p in zip(lines, positions, strict=True)}
        assert by_turn[("customer", 1)] < balance < by_turn[("agent", 1)]
        assert by_turn[("customer", 2)] < transfer < by_turn[("agent", 2)]
        assert "Which account should the money come from?" in request  # the question, too
