"""Scripted model outputs for the agent tests: one Dynamo mocker replay trace serves them all.

Each session is a list of output texts, one per request in the order the agent makes them
(agent turns and evaluator calls share one counter per trial). The agent selects turn k of
session S with the nvext annotation `output_replay_id:S:k`, so the tests pass
`--ak nvext_annotations=output_replay_id:<prefix>{scenario_id}:{request_index}`.
"""

from __future__ import annotations

import json
import re

from bankbench.serve.replay import tool_call_text as tc

_CALL = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.S)
_TEXT_ACTION = re.compile(r"Action:[*`\s]*([A-Za-z_]+)")


def scripted_calls(turns: list[str]) -> list[str]:
    """Tool names a script makes the agent call, in order (hermes blocks or text Actions)."""
    names: list[str] = []
    for turn in turns:
        blocks = _CALL.findall(turn)
        names += [json.loads(b)["name"] for b in blocks]
        if not blocks and "Final Answer" not in turn:
            names += _TEXT_ACTION.findall(turn)
    return names


ACCT_A, ACCT_B = "12345678", "87654321"

# Scenario -> (script, tool names the bank records for it). Expected tools come from each
# task's tests/expected.json; the test computes the F1 the script implies from both.
NATIVE: dict[str, list[str]] = {
    # Two right calls in one turn (parallel), then a summary.
    "banking-000": [
        tc("get_account_balance", {"account_number": ACCT_A, "account_type": "checking"})
        + "\n" + tc("transfer_funds", {"from_account": ACCT_B, "to_account": ACCT_A,
                                        "amount": 800}),
        "Your balance is checked and the transfer is on its way.",
    ],
    # One right call, one wrong tool, one call whose arguments are not an object (malformed).
    "banking-001": [
        tc("freeze_card", {"card_last4": "4821", "reason": "lost"}),
        tc("get_exchange_rate", {"from_currency": "USD", "to_currency": "EUR"}),
        '<tool_call>{"name": "request_replacement_card", "arguments": "express please"}'
        "</tool_call>",
        "I froze your card.",
    ],
    # Only wrong tools.
    "banking-002": [
        tc("open_account", {"account_type": "savings", "owners": ["Sam"],
                            "opening_deposit": 100}),
        "Done.",
    ],
    # Every expected tool, one per turn.
    "banking-003": [
        tc("send_international_wire", {"from_account": ACCT_A, "beneficiary_name": "Ana",
                                       "swift_code": "DEUTDEFF", "iban": "DE89370400440532013000",
                                       "amount": 500, "currency": "EUR"}),
        tc("get_exchange_rate", {"from_currency": "USD", "to_currency": "EUR"}),
        tc("transfer_funds", {"from_account": ACCT_A, "to_account": ACCT_B, "amount": 50}),
        "All three requests are done.",
    ],
}


def verdict(ok: bool, confidence: float, missing: list[str]) -> str:
    return json.dumps({"is_sufficient": ok, "confidence": confidence,
                       "reasoning": "scripted judgement", "missing_steps": missing})


# Self-evaluation: attempt 1 is judged insufficient, attempt 2 sufficient.
SELF_EVAL: dict[str, list[str]] = {
    "banking-000": [
        tc("get_account_balance", {"account_number": ACCT_A, "account_type": "checking"}),
        "Checked your balance.",
        verdict(False, 0.9, ["transfer_funds", "schedule_bill_payment"]),
        tc("get_account_balance", {"account_number": ACCT_A, "account_type": "checking"})
        + "\n" + tc("transfer_funds", {"from_account": ACCT_B, "to_account": ACCT_A,
                                        "amount": 800})
        + "\n" + tc("schedule_bill_payment", {"account_number": ACCT_A,
                                              "payee_name": "Metro Power", "amount": 96.4,
                                              "payment_date": "2026-11-27"}),
        "Balance checked, transfer made, bill scheduled.",
        "Here is my verdict: ```json\n" + verdict(True, 0.95, []) + "\n```",
    ],
    # The judge's first reply is unreadable (counts as a rejection), the second accepts.
    "banking-002": [
        tc("open_account", {"account_type": "savings", "owners": ["Sam"],
                            "opening_deposit": 100}),
        "Done.",
        "I think it is mostly fine?",
        tc("freeze_card", {"card_last4": "1111", "reason": "stolen"}),
        "Card frozen.",
        verdict(True, 0.8, []),
    ],
}

# Text mode (Thought/Action protocol), including an odd reply the parser must tolerate.
TEXT: dict[str, list[str]] = {
    "banking-003": [
        "Thought: the wire first\nAction: send_international_wire\nAction Input: "
        + json.dumps({"from_account": ACCT_A, "beneficiary_name": "Ana",
                      "swift_code": "DEUTDEFF", "iban": "DE89370400440532013000",
                      "amount": 500, "currency": "EUR"}),
        "**Thought:** now the rate\n**Action:** `get_exchange_rate`\n**Action Input:**\n"
        "```json\n{'from_currency': 'USD', 'to_currency': 'EUR'}\n```",
        "I am confused",
        "Thought: I am done\nFinal Answer: wire sent and rate quoted.",
    ],
}

# Conversation mode against the environment stand-in (test_conversation.py). The customer's
# side is the stand-in's; these are the model's outputs across the turns of each trial.
CONVERSATION: dict[str, list[str]] = {
    # Turn 0: a call, then a reply; turn 1: a call, then a reply the customer ends on.
    "banking-000": [
        tc("get_account_balance", {"account_number": ACCT_A, "account_type": "checking"}),
        "Your checking balance is 1,250 dollars. Anything else?",
        tc("transfer_funds", {"from_account": ACCT_B, "to_account": ACCT_A, "amount": 800}),
        "The 800 dollars are on their way to your checking account.",
    ],
    # Self-evaluation: attempt 1 only asks and is rejected; attempt 2 calls and is accepted.
    "banking-001": [
        "Which card is it, and what happened to it?",
        verdict(False, 0.9, ["freeze_card"]),
        tc("freeze_card", {"card_last4": "4821", "reason": "lost"}),
        "Your card ending 4821 is frozen.",
        verdict(True, 0.9, []),
    ],
    # One reply, then `bank say` fails (how, each test decides).
    "banking-002": ["Let me look into that for you."],
    # Text tool mode: an Action, an empty Final Answer (nothing to send: the model is told),
    # then a Final Answer that is the reply to the customer.
    "banking-003": [
        "Thought: look first\nAction: get_account_balance\nAction Input: "
        + json.dumps({"account_number": ACCT_A, "account_type": "checking"}),
        "Thought: I reply to the customer\nFinal Answer: ",
        "Thought: I reply to the customer\nFinal Answer: Your checking balance is fine.",
    ],
}

# Conversation mode end to end (test_conversation_e2e.py), sample scenario banking-000 (four
# goals) against the environment's scripted customer: the model's outputs grouped by the
# customer turn they answer. Turn 0 greets, each later turn serves the goal the customer has
# just revealed; one clarifying question; the last goal is declined (no alert tool).
CONVERSATION_E2E_TURNS: list[list[str]] = [
    ["Happy to help you get things sorted before rent is due. Tell me the first thing."],
    [tc("get_account_balance", {"account_number": ACCT_A, "account_type": "checking"}),
     "Your checking account holds 1,250 dollars right now."],
    ["Which account number is your savings account?"],
    [tc("transfer_funds", {"from_account": ACCT_B, "to_account": ACCT_A, "amount": 800}),
     "Done: 800 dollars moved from savings to checking."],
    [tc("schedule_bill_payment", {"account_number": ACCT_A, "payee_name": "Metro Power",
                                  "amount": 96.4, "payment_date": "2026-11-27"}),
     "Your Metro Power bill of 96.40 dollars is scheduled for Friday."],
    ["I'm sorry, I cannot set up text alerts: no tool I have does that."],
]
# The llm customer end to end: two replies, the task's turn limit is 2.
CONVERSATION_LLM = {"banking-002": ["Glad to help with your trip money.",
                                    "Thanks for the details, all noted."]}

# Direct client tests.
CLIENT: dict[str, list[str]] = {
    "timing": [
        "The quick brown fox jumps over the lazy dog and keeps running far away.",
        tc("get_account_balance", {"account_number": ACCT_A, "account_type": "savings"}),
    ],
}

PREFIX_NATIVE, PREFIX_SELF_EVAL, PREFIX_TEXT, PREFIX_CONVERSATION = "n-", "se-", "tx-", "cv-"
PREFIX_CONVERSATION_E2E, PREFIX_CONVERSATION_LLM = "ce-", "cl-"


def all_sessions() -> dict[str, list[str]]:
    sessions: dict[str, list[str]] = dict(CLIENT)
    e2e = {"banking-000": [out for turn in CONVERSATION_E2E_TURNS for out in turn]}
    for prefix, scripts in ((PREFIX_NATIVE, NATIVE), (PREFIX_SELF_EVAL, SELF_EVAL),
                            (PREFIX_TEXT, TEXT), (PREFIX_CONVERSATION, CONVERSATION),
                            (PREFIX_CONVERSATION_E2E, e2e),
                            (PREFIX_CONVERSATION_LLM, CONVERSATION_LLM)):
        sessions.update({prefix + sid: turns for sid, turns in scripts.items()})
    return sessions
