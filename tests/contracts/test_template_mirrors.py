"""Every value the task template copies from `contracts/`, pinned here and nowhere else.

The mock bank and the verifier run inside the task environment on the standard library alone
and cannot import `contracts/`; where they must agree with the host they carry a copy. Each
copy is one row below: add a row when you add a copy.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from contracts import conversation, intents, llm_calls, reward, toolnames, tsq

TEMPLATE = Path(__file__).resolve().parents[2] / "tasks/banking/template"
ENVIRONMENT = TEMPLATE / "environment"


def template_module(rel: str) -> ModuleType:
    """A template module imported as the task imports it (its siblings by bare name), under
    a name of its own so it never shadows a module of ours."""
    path = TEMPLATE / rel
    sys.path[:0] = [str(path.parent), str(ENVIRONMENT)]
    try:
        spec = importlib.util.spec_from_file_location(f"template_{path.stem}", path)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        del sys.path[:2]


# (template module, attribute, how its value is compared) -> the contract's value
MIRRORS: list[tuple[str, str, Any]] = [
    ("environment/mockbank.py", "CUSTOMER_FILE", conversation.CUSTOMER_FILE),
    ("environment/mockbank.py", "CUSTOMER_ENV", conversation.CUSTOMER_ENV),
    ("environment/mockbank.py", "EXIT_CUSTOMER", conversation.EXIT_CUSTOMER_MODEL_FAILED),
    ("environment/mockbank.py", "EXIT_USAGE", conversation.EXIT_USAGE),
    ("environment/intentlog.py", "MAX_LOG_LINES", intents.MAX_LOG_LINES),
    ("tests/verify.py", "MAX_LOG_LINES", intents.MAX_LOG_LINES),
    ("environment/convlog.py", "CONVERSATION_FILE", conversation.CONVERSATION_FILE),
    ("environment/customer_llm.py", "ROLE", llm_calls.USER_SIMULATOR_ROLE),
    ("tests/scoring.py", "REWARD_KEYS", reward.REWARD_KEYS),
]


@pytest.mark.parametrize(("rel", "name", "expected"), MIRRORS,
                         ids=[f"{rel}:{name}" for rel, name, _ in MIRRORS])
def test_the_template_copy_equals_the_contract(rel: str, name: str, expected: Any) -> None:
    value = getattr(template_module(rel), name)
    assert (tuple(value) if isinstance(value, list | tuple) else value) == expected


@pytest.mark.parametrize("rel", ["environment/intentlog.py", "tests/verify.py"])
def test_the_intents_log_is_where_the_contract_puts_it(rel: str) -> None:
    assert os.path.basename(template_module(rel).DEFAULT_INTENTS) == intents.INTENTS_FILE


def test_the_conversation_log_fields_are_the_contracts() -> None:
    """Every field of the contract, plus the scripted customer's extras (kept as extras)."""
    fields = template_module("environment/convlog.py").FIELDS
    extras = {"kind", "customer_kind", "customer"}
    assert set(fields) == set(conversation.ConversationEntry.model_fields) | extras


def test_the_verifier_writes_the_details_file_the_contract_names() -> None:
    assert f'"{tsq.TSQ_DETAILS_FILE}"' in (TEMPLATE / "tests/verify.py").read_text()


# Names an agent might send: prefixes, dots, case, dashes, spaces, non-ASCII, degenerate.
NAMES = ["get_account_balance", "Get-Account-Balance", "  bank__get_balance ", "tools.transfer",
         "a__b__c", "x.y.z_w", "", "__", "ÄÖ_ü-ß", "get account", "functions.bank__Freeze_Card"]


@pytest.mark.parametrize("name", NAMES)
def test_one_tool_name_rule_on_both_sides(name: str) -> None:
    """The bank's normaliser (whose suggestions the agent sees), the verifier's (TSQ) and the
    host's (export, consistency) give the same name."""
    bank = template_module("environment/toolschema.py").normalise_name(name)
    verifier = template_module("tests/scoring.py").normalise_tool_name(name)
    assert bank == verifier == toolnames.normalise_tool_name(name)


# (accept lines' attempts, attempts of the calls): accepted, retried, none, accept without calls.
LOGS = [([], [1, 1, 2]), ([1], [1, 2, 2]), ([2, 1], [1, 2]), ([], []), ([3], []), ([], [2, 1])]


@pytest.mark.parametrize(("accepts", "attempts"), LOGS)
def test_one_scored_attempt_rule_on_both_sides(accepts: list[int], attempts: list[int]) -> None:
    """The verifier's choice of the attempt it scores and the host's copy, which reads a
    trial the verifier never scored (the verifier scores attempt 1 of an empty log)."""
    log = {"accepts": [{"accept": n} for n in accepts],
           "calls": [{"attempt": n} for n in attempts]}
    verifier, _ = template_module("tests/verify.py").choose_attempt(log)
    host = intents.scored_attempt(accepts, attempts)
    assert verifier == (1 if host is None else host)


_LINE = {"seq": 1, "attempt": 1, "turn": 0, "speaker": "customer", "text": "hi", "ts": 1.5}
# A whole line as the bank writes it, then lines each broken in one way a reader might let by.
CONVERSATION_LINES = [
    _LINE, {**_LINE, "speaker": "agent", "ended": True, "end_reason": "satisfied",
            "goal_index": 2, "kind": "goal", "customer_kind": "scripted"},
    {**_LINE, "ts": 3}, {**_LINE, "goal_index": None, "end_reason": None},
    {**_LINE, "seq": 0}, {**_LINE, "attempt": 0}, {**_LINE, "turn": -1},
    {**_LINE, "seq": "1"}, {**_LINE, "attempt": True}, {**_LINE, "turn": 1.0},
    {**_LINE, "speaker": "evaluator"}, {**_LINE, "text": 7}, {**_LINE, "ts": "1.5"},
    {**_LINE, "ts": False}, {**_LINE, "ended": 1}, {**_LINE, "end_reason": "bored"},
    {**_LINE, "goal_index": "2"}, {k: v for k, v in _LINE.items() if k != "text"},
    {k: v for k, v in _LINE.items() if k != "ts"}, [1, 2], "text",
]


def test_one_conversation_log_reader_on_both_sides(tmp_path: Path) -> None:
    """The bank's, the verifier's and the host's readings of the conversation log
    (convlog.py and transcript.py through convread.py; `read_conversation_log`) keep the same
    lines and count the same as unreadable."""
    content = b"\n".join([*(json.dumps(line).encode() for line in CONVERSATION_LINES),
                          b'{"seq": 1, "attempt"', b"\xff\xfe", b"", b"  "])
    (log := tmp_path / conversation.CONVERSATION_FILE).write_bytes(content)
    bank = template_module("environment/convlog.py").read_entries(str(log))
    verifier = template_module("tests/transcript.py").read_log(str(log))
    host, host_bad = conversation.read_conversation_log(content)
    assert [e.model_dump(exclude_unset=True) for e in host] == bank == verifier["entries"]
    assert verifier["corrupt_lines"] == host_bad == len(CONVERSATION_LINES) + 2 - 4  # 4 whole
