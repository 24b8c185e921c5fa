"""Pure functions: the text-mode reply parser, the evaluator verdict parser, option checks,
and the shell quoting of bank calls."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agents.bank_bridge import MAX_SAY_BYTES, call_command, say_command, say_env
from agents.options import parse_options, strip_provider
from agents.self_eval import parse_verdict, retry_feedback
from agents.text_protocol import parse_reply

# ---- text protocol ----------------------------------------------------------------------


@pytest.mark.parametrize("text, action, args", [
    ('Thought: check\nAction: get_account_balance\nAction Input: {"account_number": "1"}',
     "get_account_balance", {"account_number": "1"}),
    ('**Thought:** hm\n**Action:** `transfer_funds`\n**Action Input:**\n```json\n'
     '{"amount": 5}\n```', "transfer_funds", {"amount": 5}),
    ("ACTION: freeze_card\naction input: {'card_last4': '1234', 'urgent': True}",
     "freeze_card", {"card_last4": "1234", "urgent": True}),
    ('Action: get_exchange_rate({"from_currency": "USD"})', "get_exchange_rate",
     {"from_currency": "USD"}),
    ('Action: t\nAction Input: {"a": "}"} and then I will wait', "t", {"a": "}"}),
    ('Action: find_branch_or_atm', "find_branch_or_atm", {}),
    ('Sure! <tool_call>{"name": "freeze_card", "arguments": {"card_last4": "9"}}</tool_call>',
     "freeze_card", {"card_last4": "9"}),
    ('Thought: my transaction: odd\nAction: ok_tool\nAction Input: {}', "ok_tool", {}),
])
def test_actions_are_read_from_odd_replies(text, action, args):
    reply = parse_reply(text)
    assert reply.error is None and reply.final_answer is None
    assert reply.action == action and json.loads(reply.action_input) == args


def test_invalid_json_input_is_passed_on_raw():
    reply = parse_reply("Action: transfer_funds\nAction Input: {amount: five")
    assert reply.action == "transfer_funds" and reply.action_input == "{amount: five"


@pytest.mark.parametrize("text", [
    "Thought: done\nFinal Answer: all good",
    "final answer: all good\nAction: should_not_run",
])
def test_final_answer(text):
    reply = parse_reply(text)
    assert reply.action is None and reply.final_answer.startswith("all good")


@pytest.mark.parametrize("text", ["", "I am confused", "Action:\nAction Input: {}",
                                  "<tool_call>{not json</tool_call>"])
def test_unusable_replies_become_errors(text):
    reply = parse_reply(text)
    assert reply.action is None and reply.final_answer is None and reply.error


# ---- self-evaluation verdicts -----------------------------------------------------------


def test_plain_json_verdict():
    v = parse_verdict('{"is_sufficient": true, "confidence": 0.9, "reasoning": "ok", '
                      '"missing_steps": []}', attempt=2, min_confidence=0.7)
    assert (v.attempt, v.is_sufficient, v.confidence, v.parsed, v.accepted) == (2, True, 0.9,
                                                                               True, True)


@pytest.mark.parametrize("text, sufficient, confidence, accepted", [
    ('Verdict:\n```json\n{"is_sufficient": "yes", "confidence": "85%"}\n```', True, 0.85, True),
    ("{'Is_Sufficient': True, 'confidence': 60}", True, 0.6, False),  # below min_confidence
    ('{"is_sufficient": false, "confidence": 1.0, "missing_steps": "transfer"}', False, 1.0,
     False),
    ('{"is_sufficient": true}', True, 0.0, False),  # no confidence given: not accepted
])
def test_tolerant_verdicts(text, sufficient, confidence, accepted):
    v = parse_verdict(text, attempt=1, min_confidence=0.7)
    assert v.parsed and v.is_sufficient is sufficient
    assert v.confidence == pytest.approx(confidence) and v.accepted is accepted


@pytest.mark.parametrize("text", ["", "looks fine to me", '{"confidence": 0.9}', "[true]"])
def test_unreadable_verdict_is_insufficient(text):
    v = parse_verdict(text, attempt=3, min_confidence=0.0)
    assert not v.parsed and not v.is_sufficient and v.confidence == 0.0 and not v.accepted


def test_feedback_carries_reasoning_and_missing_steps():
    v = parse_verdict('{"is_sufficient": false, "confidence": 0.9, "reasoning": "no transfer",'
                      ' "missing_steps": ["transfer_funds"]}', 1, 0.7)
    text = retry_feedback(v)
    assert "no transfer" in text and "transfer_funds" in text


# ---- options ----------------------------------------------------------------------------


def test_unknown_and_bad_options_are_named():
    with pytest.raises(ValueError, match="unknown option --ak tool_mod"):
        parse_options({"tool_mod": "text"})
    with pytest.raises(ValueError, match="--ak max_steps"):
        parse_options({"max_steps": 0})
    with pytest.raises(ValueError, match="nvext_annotations template"):
        parse_options({"nvext_annotations": ["id:{no_such_field}"]})


def test_annotations_from_one_string():
    opts = parse_options({"nvext_annotations": "a:{scenario_id},b:{request_index}"})
    assert opts.nvext_annotations == ["a:{scenario_id}", "b:{request_index}"]


@pytest.mark.parametrize("given, served", [("openai/smollm2-mock", "smollm2-mock"),
                                           ("Qwen/Qwen3-8B", "Qwen/Qwen3-8B"),
                                           ("plain", "plain")])
def test_provider_prefix(given, served):
    assert strip_provider(given) == served


def test_agent_rejects_unknown_ak(tmp_path: Path):
    from agents.banking import BankingAgent

    with pytest.raises(ValueError, match="unknown option"):
        BankingAgent(logs_dir=tmp_path, model_name="m", toolmode="text")
    agent = BankingAgent(logs_dir=tmp_path, model_name="openai/m", base_url="http://x/v1",
                         tool_mode="text", override_setup_timeout_sec=5)
    assert agent.served_model == "m" and agent.agent_options.base_url == "http://x/v1"


# ---- shell quoting of bank calls --------------------------------------------------------


@pytest.mark.parametrize("tool, args", [
    ("transfer_funds", '{"memo": "it\'s $(rm -rf /) `id` \\"quoted\\"\\n"}'),
    ("odd name; echo pwned", "{'single': 'quotes'}"),
    ("t", ""),
])
def test_bank_call_arguments_reach_the_bank_verbatim(tmp_path: Path, tool, args):
    stub = tmp_path / "bank"
    stub.write_text(f"#!{sys.executable}\nimport json, sys\nprint(json.dumps(sys.argv[1:]))\n")
    stub.chmod(0o755)
    cmd = call_command(tool, args, 2, bank=str(stub))
    out = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == ["call", tool, args, "--attempt", "2"]


@pytest.mark.parametrize("message", [
    "rm -f -- /logs/verifier/reward.txt /logs/verifier/reward.json",
    "-", "--attempt=99", "it's $(kill -9 -1) `id` \"q\"\n two lines", "nul\x00 and \ud800",
])
def test_say_sends_the_message_on_stdin_never_on_the_command_line(tmp_path: Path, message):
    stub = tmp_path / "bank"
    stub.write_text(f"#!{sys.executable}\nimport json, sys\n"
                    "print(json.dumps([sys.argv[1:], sys.stdin.read()]))\n")
    stub.chmod(0o755)
    command = say_command(3, bank=str(stub))
    assert "reward" not in command and "kill" not in command
    env = {"PATH": os.environ["PATH"], **say_env(message)}
    out = subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True,
                         check=True).stdout
    argv, stdin = json.loads(out)
    assert argv == ["say", "-", "--attempt", "3"]
    assert stdin == message.replace("\x00", "\ufffd").replace("\ud800", "?")


def test_say_passes_at_most_a_bounded_message():
    [value] = say_env("é" * MAX_SAY_BYTES).values()
    assert len(value.encode()) <= MAX_SAY_BYTES + len(" [...]") and value.endswith(" [...]")


# ---- tool_choice option -----------------------------------------------------------------


def test_tool_choice_modes_per_turn():
    from agents.react import tool_choice_for

    assert [tool_choice_for("first", s) for s in (1, 2, 3)] == ["required", "auto", "auto"]
    assert [tool_choice_for("required", s) for s in (1, 5)] == ["required", "required"]
    assert [tool_choice_for("auto", s) for s in (1, 5)] == ["auto", "auto"]
    assert parse_options({"tool_choice": "first"}).tool_choice == "first"
    with pytest.raises(ValueError, match="tool_choice"):
        parse_options({"tool_choice": "sometimes"})


def test_parallel_tool_calls_is_sent_only_when_set():
    from agents.react import request_params

    tools = [{"type": "function", "function": {"name": "t", "parameters": {}}}]
    unset = request_params(tools, parse_options({"tool_choice": "first"}), 1)
    assert "parallel_tool_calls" not in unset
    one = request_params(tools, parse_options({"tool_choice": "first",
                                               "parallel_tool_calls": "false"}), 1)
    assert one["parallel_tool_calls"] is False and one["tool_choice"] == "required"
