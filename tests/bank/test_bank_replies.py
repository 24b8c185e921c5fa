"""Mock replies, checked in-process: every reply satisfies the response schema it was shaped by."""

from __future__ import annotations

import json
import random
import re
from types import SimpleNamespace

import pytest

from tests.support.bank_harness import FIXTURES, import_task_modules


@pytest.fixture(scope="module")
def bank_module() -> SimpleNamespace:
    """The reply generator and the schema validator, imported from the task's environment/."""
    modules = import_task_modules("mockreplies", "toolschema")
    return SimpleNamespace(mock_value=modules["mockreplies"].mock_value,
                           validate=modules["toolschema"].validate)


RESPONSES = json.loads((FIXTURES / "responses.json").read_text())
EXTRA_SCHEMAS = {
    "typed_list": {"type": "array", "items": {"type": "integer", "minimum": 3, "maximum": 4}},
    "nullable": {"type": "object", "properties": {"note": {"type": ["null", "string"]}}},
    "untyped": {"properties": {"items": {"items": {"type": "boolean"}}}},
    "deep": {
        "type": "object",
        "properties": {
            "a": {
                "type": "object",
                "properties": {
                    "b": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {"c": {"type": "string", "format": "date-time"}},
                        },
                    }
                },
            }
        },
    },
}


@pytest.mark.parametrize("name", sorted({**RESPONSES, **EXTRA_SCHEMAS}))
def test_replies_satisfy_their_response_schema(bank_module: SimpleNamespace, name: str) -> None:
    schema = {**RESPONSES, **EXTRA_SCHEMAS}[name]
    for seed in range(40):
        reply = bank_module.mock_value(schema, "", random.Random(seed), {})
        errors: list[str] = []
        bank_module.validate(reply, schema, "reply", errors)
        assert errors == [], (seed, reply)


def test_replies_echo_the_callers_values(bank_module: SimpleNamespace) -> None:
    reply = bank_module.mock_value(
        RESPONSES["get_account_balance"], "", random.Random(1), {"account_number": "777"}
    )
    assert reply["account_number"] == "777"


@pytest.mark.parametrize(
    ("name", "pattern"),
    [
        ("transaction_id", r"TRA-\d{6}"),
        ("created_at", r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:00Z"),
        ("due_date", r"\d{4}-\d{2}-\d{2}"),
        ("contact_email", r"[a-z]+\.[a-z]+@example\.com"),
        ("phone", r"\+1-555-\d{4}"),
        ("currency", r"USD|EUR|GBP"),
        ("account_number", r"\d{10}"),
        ("holder_name", r"[A-Z][a-z]+ [A-Z][a-z]+"),
    ],
)
def test_strings_look_like_what_their_name_says(
    bank_module: SimpleNamespace, name: str, pattern: str
) -> None:
    value = bank_module.mock_value({"type": "string"}, name, random.Random(7), {})
    assert re.fullmatch(pattern, value), value
