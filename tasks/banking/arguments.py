"""Arguments that satisfy a tool's JSON Schema, for the oracle solution (solution/solve.sh).

Values are plausible and deterministic: a parameter's name suggests a value (account numbers,
dates, ZIP codes…), an enum value mentioned in the goal is preferred, and patterns, lengths and
bounds are honoured; a string pattern no suggestion satisfies gets a string generated from the
regular expression itself. Only required properties are filled: the fewest assumptions.
"""

from __future__ import annotations

import re

# re's own parser turns a pattern into opcodes that can be walked to build a matching string.
from re import _constants as sre_c
from re import _parser as sre_parse
from typing import Any

DATE = "2026-03-16"
DATE_TIME = "2026-03-16T10:00:00Z"

# (substring of the parameter name, suggested value); first match wins.
NAME_HINTS: tuple[tuple[str, str], ...] = (
    ("last4", "4821"),
    ("last_four", "4821"),
    ("email", "alex.morgan@example.com"),
    ("phone", "+1 312 555 0187"),
    ("postal", "60614"),
    ("zip", "60614"),
    ("swift", "BANKUS33XXX"),
    ("bic", "BANKUS33XXX"),
    ("iban", "GB82WEST12345698765432"),
    ("currency", "USD"),
    ("date", DATE),
    ("account", "4401287765"),
    ("state", "IL"),
    ("city", "Chicago"),
    ("street", "120 Lake Shore Dr"),
    ("address", "120 Lake Shore Dr, Chicago, IL 60614"),
    ("country", "US"),
    ("name", "Alex Morgan"),
    ("customer_id", "C100245"),
    ("_id", "ID-100245"),
    ("number", "100245"),
)


def arguments_for(parameters: dict[str, Any], required: list[str], hint: str = "") -> dict:
    """Tool-call arguments: every required parameter, nothing else."""
    return {name: value_for(parameters.get(name) or {}, name, hint) for name in required}


def value_for(schema: dict[str, Any], name: str = "", hint: str = "") -> Any:
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return _pick_enum(schema["enum"], hint)
    branches = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(branches, list) and branches and isinstance(branches[0], dict):
        return value_for(branches[0], name, hint)
    kind = _type_of(schema)
    if kind == "string":
        return _string(schema, name)
    if kind == "integer":
        return int(_number(schema, default=1, integer=True))
    if kind == "number":
        return _number(schema, default=100.0, integer=False)
    if kind == "boolean":
        return False  # the cautious choice for flags such as "permanent"
    if kind == "array":
        items = schema.get("items") if isinstance(schema.get("items"), dict) else {}
        count = max(1, schema.get("minItems") or 0)
        if isinstance(schema.get("maxItems"), int):
            count = min(count, schema["maxItems"])
        return [value_for(items, name, hint) for _ in range(count)]
    if kind == "object":
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        needed = schema.get("required") if isinstance(schema.get("required"), list) else []
        return arguments_for(props, [n for n in needed if isinstance(n, str)], hint)
    return None


def _type_of(schema: dict[str, Any]) -> str:
    declared = schema.get("type")
    if isinstance(declared, list):
        declared = next((t for t in declared if t != "null"), "null")
    if isinstance(declared, str):
        return declared
    if "properties" in schema:
        return "object"
    if "items" in schema:
        return "array"
    return "string"


def _pick_enum(options: list[Any], hint: str) -> Any:
    text = hint.lower()
    for option in options:
        if isinstance(option, str) and option.lower().replace("_", " ") in text:
            return option
    return options[0]


def _number(schema: dict[str, Any], default: float, integer: bool) -> float:
    step = 1 if integer else 0.01
    low = schema.get("minimum")
    if isinstance(schema.get("exclusiveMinimum"), (int, float)):
        low = schema["exclusiveMinimum"] + step
    high = schema.get("maximum")
    if isinstance(schema.get("exclusiveMaximum"), (int, float)):
        high = schema["exclusiveMaximum"] - step
    value = default
    if isinstance(low, (int, float)) and value < low:
        value = low
    if isinstance(high, (int, float)) and value > high:
        value = high
    if integer:
        value = int(value) if value == int(value) else int(value) + 1
    return value


def _string(schema: dict[str, Any], name: str) -> str:
    candidates = []
    fmt = schema.get("format")
    if fmt == "date":
        candidates.append(DATE)
    elif fmt == "date-time":
        candidates.append(DATE_TIME)
    elif fmt == "email":
        candidates.append("alex.morgan@example.com")
    elif fmt in ("uri", "url"):
        candidates.append("https://example.com")
    lowered = name.lower()
    candidates += [value for key, value in NAME_HINTS if key in lowered]
    candidates.append("example")
    pattern = schema.get("pattern") if isinstance(schema.get("pattern"), str) else None
    for candidate in candidates:
        fitted = _fit_length(candidate, schema)
        if pattern is None or _matches(pattern, fitted):
            return fitted
    generated = from_pattern(pattern) if pattern else None
    return _fit_length(generated if generated is not None else "example", schema)


def _fit_length(text: str, schema: dict[str, Any]) -> str:
    low, high = schema.get("minLength"), schema.get("maxLength")
    if isinstance(high, int) and len(text) > high:
        text = text[:high]
    if isinstance(low, int) and len(text) < low:
        text = text + "x" * (low - len(text))
    return text


def _matches(pattern: str, text: str) -> bool:
    try:
        return re.search(pattern, text) is not None
    except re.error:
        return True  # the mock bank ignores a broken pattern too


def from_pattern(pattern: str) -> str | None:
    """A string matching `pattern` (the smallest repeat counts, the first alternative)."""
    try:
        text = _emit(sre_parse.parse(pattern))
    except (re.error, ValueError, TypeError, KeyError):
        return None
    return text if _matches(pattern, text) else None


_CATEGORY_CHAR = {
    sre_c.CATEGORY_DIGIT: "0",
    sre_c.CATEGORY_NOT_DIGIT: "a",
    sre_c.CATEGORY_WORD: "a",
    sre_c.CATEGORY_NOT_WORD: " ",
    sre_c.CATEGORY_SPACE: " ",
    sre_c.CATEGORY_NOT_SPACE: "a",
}


def _emit(parsed: Any) -> str:
    out = []
    for op, arg in parsed:
        if op is sre_c.LITERAL:
            out.append(chr(arg))
        elif op is sre_c.NOT_LITERAL:
            out.append("a" if chr(arg) != "a" else "b")
        elif op is sre_c.ANY:
            out.append("a")
        elif op is sre_c.IN:
            out.append(_emit_set(arg))
        elif op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, sre_c.POSSESSIVE_REPEAT):
            low, _high, body = arg
            out.append(_emit(body) * max(low, 0))
        elif op is sre_c.SUBPATTERN:
            out.append(_emit(arg[-1]))
        elif op is sre_c.BRANCH:
            out.append(_emit(arg[1][0]))
        elif op is sre_c.CATEGORY:
            out.append(_CATEGORY_CHAR.get(arg, "a"))
        elif op in (sre_c.AT, sre_c.ASSERT, sre_c.ASSERT_NOT):
            continue
        else:
            raise ValueError(f"unsupported pattern element {op}")
    return "".join(out)


def _emit_set(items: list[tuple[Any, Any]]) -> str:
    if items and items[0][0] is sre_c.NEGATE:
        excluded = _set_chars(items[1:])
        return next(c for c in "a0A_ -" if c not in excluded)
    for op, arg in items:
        if op is sre_c.LITERAL:
            return chr(arg)
        if op is sre_c.RANGE:
            return chr(arg[0])
        if op is sre_c.CATEGORY:
            return _CATEGORY_CHAR.get(arg, "a")
    raise ValueError("empty character set")


def _set_chars(items: list[tuple[Any, Any]]) -> set[str]:
    chars: set[str] = set()
    for op, arg in items:
        if op is sre_c.LITERAL:
            chars.add(chr(arg))
        elif op is sre_c.RANGE:
            chars.update(chr(c) for c in range(arg[0], arg[1] + 1))
    return chars
