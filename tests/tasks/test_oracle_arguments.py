"""Synthesised oracle arguments satisfy the schemas they are made from."""

from __future__ import annotations

import re

import jsonschema
import pytest

from tasks.banking.arguments import arguments_for, from_pattern, value_for
from tasks.banking.dataset import load

SAMPLE = load("sample")


@pytest.mark.parametrize("tool", SAMPLE.tools, ids=lambda t: t.title)
def test_every_sample_tool_gets_valid_arguments(tool):
    schema = {
        "type": "object",
        "properties": tool.parameters,
        "required": tool.required,
        "additionalProperties": False,
    }
    arguments = arguments_for(tool.parameters, tool.required)
    jsonschema.validate(arguments, schema)
    assert sorted(arguments) == sorted(tool.required)


@pytest.mark.parametrize(
    "pattern",
    [
        r"^[0-9]{8,12}$",
        r"^L[0-9]{7}$",
        r"^[A-Z]{6}[A-Z0-9]{2}([A-Z0-9]{3})?$",
        r"^\+?[0-9 ()-]{7,20}$",
        r"^(ACC|SAV)-\d{4}$",
        r"^[^0-9]{3}\.x$",
        r"^\w+@\w+\.com$",
    ],
)
def test_patterns_are_satisfied(pattern):
    text = from_pattern(pattern)
    assert text is not None and re.search(pattern, text)
    assert re.search(pattern, value_for({"type": "string", "pattern": pattern}, "reference"))


def test_name_hints_respect_the_schema():
    # The account-number hint has 10 digits; a 6-digit pattern forces a generated value.
    value = value_for({"type": "string", "pattern": "^[0-9]{6}$"}, "account_number")
    assert re.fullmatch(r"[0-9]{6}", value)
    assert value_for({"type": "string", "format": "date"}, "when") == "2026-03-16"
    assert len(value_for({"type": "string", "minLength": 12}, "memo")) == 12
    assert len(value_for({"type": "string", "maxLength": 3}, "customer_name")) == 3


def test_enum_mentioned_in_the_goal_is_preferred():
    schema = {"type": "string", "enum": ["checking", "savings", "money_market"]}
    assert value_for(schema, "account_type", "what is in my money market account") == "money_market"
    assert value_for(schema, "account_type", "nothing relevant") == "checking"


@pytest.mark.parametrize(
    ("schema", "check"),
    [
        ({"type": "integer", "minimum": 5, "maximum": 9}, lambda v: v == 5),
        ({"type": "integer", "exclusiveMinimum": 10}, lambda v: v == 11),
        ({"type": "number", "maximum": 20}, lambda v: v == 20),
        ({"type": "number", "exclusiveMaximum": 0}, lambda v: v < 0),
        ({"type": ["null", "boolean"]}, lambda v: v is False),
        ({"type": "array", "items": {"type": "integer"}, "minItems": 3}, lambda v: v == [1, 1, 1]),
        ({"anyOf": [{"type": "string", "enum": ["x"]}, {"type": "integer"}]}, lambda v: v == "x"),
        ({"const": 7}, lambda v: v == 7),
        ({"properties": {"a": {"type": "integer"}}, "required": ["a"]}, lambda v: v == {"a": 1}),
    ],
)
def test_types_and_bounds(schema, check):
    value = value_for(schema, "x")
    assert check(value), value
    jsonschema.validate(value, schema)
