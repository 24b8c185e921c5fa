"""`bank say` as an agent uses it (the real script, in-process and through the bank service):
the printed SayReply, the conversation log, the turn on every call record, attempts, the turn
limit, and bad input."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from contracts.conversation import ConversationEntry, SayReply
from tests.support.bank_harness import BANK_SCRIPT, FIXTURES, Bank, write_brief

SERVICE = BANK_SCRIPT.with_name("bankd.py")
GOALS = ["Find out how much money is in my checking account right now",
         "Move $800 from my savings into checking",
         "Pay my electricity bill of $96.40 to Metro Power this Friday",
         "Get a text message when my checking balance drops under $150"]
BALANCE = '{"account_number": "00123", "account_type": "checking"}'


@pytest.fixture
def talk(tmp_path: Path, python: str) -> Bank:
    """A trial's bank whose folder holds a customer brief."""
    folder = tmp_path / "app"
    shutil.copytree(FIXTURES, folder)
    write_brief(folder, GOALS)
    return Bank(bank_dir=folder, intents=tmp_path / "logs" / "agent" / "intents.jsonl",
                python=python)


def conversation(bank: Bank) -> list[dict]:
    path = bank.intents.with_name("conversation.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


def say(bank: Bank, message: str, *args: str, **env: str) -> SayReply:
    done = bank.run("say", message, *args, **env)
    assert done.returncode == 0, done.stderr
    return SayReply.model_validate_json(done.stdout)


def test_say_prints_the_customers_answer_and_logs_both_sides(talk: Bank) -> None:
    first = say(talk, "Hello, how can I help you today?")
    assert (first.turn, first.ended, first.customer_kind) == (1, False, "scripted")
    assert "checking account" in first.customer
    lines = [ConversationEntry.model_validate(line) for line in conversation(talk)]
    assert [(e.seq, e.turn, e.speaker) for e in lines] == [
        (1, 0, "customer"), (2, 0, "agent"), (3, 1, "customer")]
    assert lines[0].text == "Hi, I got paid." and lines[2].goal_index == 0
    assert lines[1].text == "Hello, how can I help you today?"
    # who answered: the scripted customer, named by the hash of its own file
    digest = hashlib.sha256((BANK_SCRIPT.parent / "customer.py").read_bytes()).hexdigest()
    assert lines[2].model_extra["customer"] == f"scripted customer.py sha256:{digest[:12]}"


def test_every_call_record_carries_the_turn_it_was_made_in(talk: Bank) -> None:
    talk.run("call", "get_account_balance", BALANCE)  # before the first say: turn 0
    say(talk, "Hi!")
    talk.run("call", "get_account_balance", BALANCE)
    talk.run("call", "get_account_balance", "{}")  # a rejected call is stamped too
    say(talk, "Your balance is $20.")
    talk.run("call", "transfer_funds", "{}")
    talk.run("call", "get_account_balance", BALANCE, "--attempt", "2")  # its own conversation
    assert [(r["attempt"], r["turn"]) for r in talk.records()] == [
        (1, 0), (1, 1), (1, 1), (1, 2), (2, 0)]
    assert list(talk.records()[0])[:4] == ["seq", "attempt", "turn", "tool"]


def test_a_new_attempt_starts_a_fresh_conversation(talk: Bank) -> None:
    say(talk, "Hi!")
    say(talk, "Done.")
    again = say(talk, "Hi!", "--attempt", "2")
    by_env = say(talk, "Done.", BANK_ATTEMPT="2")
    assert (again.turn, by_env.turn) == (1, 2)
    assert again.customer == say(talk, "x", "--attempt", "3").customer  # the same opening
    second = [e for e in conversation(talk) if e["attempt"] == 2]
    assert [e["turn"] for e in second] == [0, 0, 1, 1, 2]
    assert [e["seq"] for e in conversation(talk)] == list(range(1, 14))


def test_satisfied_then_nothing_changes(talk: Bank) -> None:
    replies = [say(talk, text) for text in ("Hi", "Done.", "Done.", "Done.", "Done.")]
    assert replies[-1].ended and replies[-1].end_reason == "satisfied"
    before = conversation(talk)
    after = say(talk, "Anything else?")
    assert after == replies[-1] and conversation(talk) == before


def test_the_max_turns_th_say_ends_the_conversation(talk: Bank) -> None:
    write_brief(talk.bank_dir, GOALS, max_turns=3)
    replies = [say(talk, "What account is that?") for _ in range(3)]
    assert [r.ended for r in replies] == [False, False, True]
    assert replies[-1].end_reason == "turn_limit" and replies[-1].turn == 3
    assert say(talk, "Hello?") == replies[-1]
    assert conversation(talk)[-1]["kind"] == "turn_limit"


def test_the_message_may_come_on_stdin_and_in_several_words(talk: Bank) -> None:
    done = talk.run("say", "-", stdin="It's done; what's next? 'quotes' \"and\" $HOME")
    assert done.returncode == 0, done.stderr
    talk.run("say", "All", "done", "now.")
    agent = [e["text"] for e in conversation(talk) if e["speaker"] == "agent"]
    assert agent == ["It's done; what's next? 'quotes' \"and\" $HOME", "All done now."]


def test_bad_input_is_a_one_line_error_and_records_nothing(talk: Bank, tmp_path) -> None:
    for args, code, words in ((("say",), 64, "needs a message"),
                              (("say", "   "), 64, "non-empty"),
                              (("say", "hi", "--attempt", "0"), 64, "positive integer")):
        done = talk.run(*args)
        assert done.returncode == code and words in done.stderr, (args, done.stderr)
    wrong = talk.run("say", "hi", BANK_CUSTOMER="robot")
    assert wrong.returncode == 64 and "BANK_CUSTOMER must be one of" in wrong.stderr
    assert not talk.intents.with_name("conversation.jsonl").exists()
    (talk.bank_dir / "customer.json").unlink()
    missing = talk.run("say", "hi")
    assert missing.returncode == 78 and "conversation-mode task" in missing.stderr


def test_llm_customer_without_settings_is_an_error_not_a_message(talk: Bank) -> None:
    done = talk.run("say", "hi", BANK_CUSTOMER="llm")
    assert done.returncode == 75 and "BANK_USER_BASE_URL" in done.stderr
    assert json.loads(done.stdout)["simulator_calls"] == []
    assert conversation(talk) == []


@pytest.fixture
def service(talk: Bank, tmp_path: Path, python: str) -> Iterator[tuple[Path, Path]]:
    """The bank service on its own socket and logs: (socket, conversation log)."""
    sock, logs = tmp_path / "run" / "bank.sock", tmp_path / "service"
    env = {**os.environ, "BANK_SOCKET": str(sock), "BANK_DIR": str(talk.bank_dir),
           "BANK_INTENTS": str(logs / "intents.jsonl")}
    process = subprocess.Popen([python, str(SERVICE)], env=env, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 20
    while not sock.exists():
        assert process.poll() is None and time.monotonic() < deadline, process.stderr
        time.sleep(0.02)
    yield sock, logs / "conversation.jsonl"
    process.kill()
    process.wait()


def test_the_service_holds_the_same_conversation(talk: Bank, service, tmp_path) -> None:
    sock, log = service
    decoy = tmp_path / "decoy"
    lines = ("Hello", "Which account?", "Done.", "I can't do that.", "Done.", "Done.")
    here = [say(talk, text) for text in lines]
    # The caller's log settings mean nothing to the service; its customer settings do arrive.
    served = [say(talk, text, BANK_SOCKET=str(sock), BANK_CONVERSATION=str(decoy),
                  BANK_INTENTS=str(decoy)) for text in lines]
    assert served == here and not decoy.exists()
    strip = [{k: v for k, v in e.items() if k != "ts"} for e in conversation(talk)]
    assert [{k: v for k, v in json.loads(line).items() if k != "ts"}
            for line in log.read_text().splitlines()] == strip
    wrong = talk.run("say", "hi", BANK_SOCKET=str(sock), BANK_CUSTOMER="robot")
    assert wrong.returncode == 64 and "BANK_CUSTOMER" in wrong.stderr
