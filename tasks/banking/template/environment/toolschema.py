"""A JSON-Schema subset validator for tool arguments, shared by the mock bank and the verifier.

One source file: the task builder ships it into both environment/ (the bank validates each call
as it is made) and tests/ (the verifier validates every recorded call again, trusting no flag in
the log). Covers what tool schemas use: type (with Python-flavoured aliases), enum, const,
anyOf/oneOf, string length/pattern/format (date, date-time, email), number bounds, array
length/items, object required/properties/additionalProperties.

Standard library only; runs on Python 3.8+.
"""

from __future__ import annotations

import json
import re

TYPE_CHECKING = False  # typing is imported by type checkers only (start-up cost)
if TYPE_CHECKING:
    from typing import Any

# Bounds that keep one runaway call from producing an unbounded error report.
MAX_ERRORS = 50
MAX_ARGUMENT_DEPTH = 64
MAX_ERROR_CHARS = 500


def tool_index(tools: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Tool name -> its `parameters` schema (OpenAI `{"type": "function", "function": {...}}`
    entries, or bare `{"name", "parameters"}` ones)."""
    index: dict[str, dict[str, Any]] = {}
    for entry in tools:
        if not isinstance(entry, dict):
            continue
        function = entry.get("function", entry)
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            parameters = function.get("parameters")
            index[function["name"]] = parameters if isinstance(parameters, dict) else {}
    return index



def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def parse_arguments(raw: str) -> tuple[bool, Any, str]:
    """(parsed ok, value, error message)."""
    try:
        value = json.loads(raw, parse_constant=_reject_constant)
    except ValueError as exc:
        return False, raw, str(exc)
    except RecursionError:
        return False, raw, "nested too deeply to read"
    return True, value, ""


def nesting_depth(value: Any) -> int:
    """Deepest list/object nesting, counted without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(
            item, list) else None
        if children is not None:
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in children)
    return deepest



# ---------------------------------------------------------------- schema validation

JSON_TYPES = ("object", "array", "string", "integer", "number", "boolean", "null")
# Python-flavoured type names some tool schemas use instead of JSON Schema's.
TYPE_ALIASES = {"int": "integer", "float": "number", "double": "number", "bool": "boolean",
                "str": "string", "list": "array", "dict": "object", "none": "null"}


def json_type_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def matches_type(value: Any, expected: str) -> bool:
    actual = json_type_of(value)
    if expected == "number":
        return actual in ("integer", "number")
    if expected == "integer":
        # JSON Schema counts 3.0 as an integer; booleans are never numbers.
        return actual == "integer" or (actual == "number" and float(value).is_integer())
    return actual == expected


def same_json_value(a: Any, b: Any) -> bool:
    """JSON equality: true is not 1 (as it is to Python's ==), 1 equals 1.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json_value(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json_value(a[k], b[k]) for k in a)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


def short(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe_property(schema: dict[str, Any]) -> str:
    parts = []
    if "type" in schema:
        parts.append(str(schema["type"]))
    if isinstance(schema.get("enum"), list):
        parts.append("one of " + ", ".join(short(v) for v in schema["enum"]))
    if isinstance(schema.get("description"), str) and schema["description"]:
        parts.append(schema["description"].strip())
    return "; ".join(parts)


def validate(value: Any, schema: Any, path: str, errors: list[str]) -> None:
    """Append one message per problem found in `value` against a JSON Schema subset."""
    if not isinstance(schema, dict):
        return
    declared = schema.get("type")
    types = declared if isinstance(declared, list) else [declared] if declared else []
    types = [TYPE_ALIASES.get(t, t) for t in types if isinstance(t, str)]
    types = [t for t in types if t in JSON_TYPES]
    if types and not any(matches_type(value, t) for t in types):
        wanted = " or ".join(types)
        errors.append(f"{path}: expected {wanted}, got {json_type_of(value)} {short(value)}")
        return
    if isinstance(schema.get("enum"), list) and not any(
        same_json_value(value, option) for option in schema["enum"]
    ):
        allowed = ", ".join(short(v) for v in schema["enum"])
        errors.append(f"{path}: {short(value)} is not one of the allowed values: {allowed}")
    if "const" in schema and not same_json_value(value, schema["const"]):
        errors.append(f"{path}: must be exactly {short(schema['const'])}")
    if isinstance(schema.get("anyOf"), list) or isinstance(schema.get("oneOf"), list):
        branches = schema.get("anyOf") or schema.get("oneOf")
        if not any(_is_valid(value, branch, path) for branch in branches):
            errors.append(f"{path}: {short(value)} matches none of the allowed shapes")
    if isinstance(value, str):
        check_string(value, schema, path, errors)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        check_number(value, schema, path, errors)
    elif isinstance(value, list):
        check_array(value, schema, path, errors)
    elif isinstance(value, dict):
        check_object(value, schema, path, errors)


def _is_valid(value: Any, schema: Any, path: str) -> bool:
    found: list[str] = []
    validate(value, schema, path, found)
    return not found


def check_string(value: str, schema: dict[str, Any], path: str, errors: list[str]) -> None:
    min_length, max_length = schema.get("minLength"), schema.get("maxLength")
    if isinstance(min_length, int) and len(value) < min_length:
        errors.append(f"{path}: must have at least {min_length} characters")
    if isinstance(max_length, int) and len(value) > max_length:
        errors.append(f"{path}: must have at most {max_length} characters")
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        try:
            if re.search(pattern, value) is None:
                errors.append(f"{path}: {short(value)} does not match pattern {pattern}")
        except re.error:
            pass  # a broken pattern in the schema is not the caller's fault
    fmt = schema.get("format")
    if fmt in FORMATS and not FORMATS[fmt][0](value):
        errors.append(f"{path}: {short(value)} is not a valid {fmt} ({FORMATS[fmt][1]})")


def is_date(text: str) -> bool:
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        return False
    import datetime

    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def is_date_time(text: str) -> bool:
    match = re.fullmatch(
        r"(\d{4}-\d{2}-\d{2})[Tt ](\d{2}):(\d{2})(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})?", text
    )
    if not match or not is_date(match.group(1)):
        return False
    return int(match.group(2)) < 24 and int(match.group(3)) < 60


# The string formats a banking API would refuse when malformed: (check, what is expected).
FORMATS = {
    "date": (is_date, "YYYY-MM-DD"),
    "date-time": (is_date_time, "YYYY-MM-DDTHH:MM:SSZ"),
    "email": (lambda t: re.fullmatch(r"[^@\s]+@[^@\s]+\.[^@\s]+", t) is not None,
              "name@example.com"),
}


def check_number(value: float, schema: dict[str, Any], path: str, errors: list[str]) -> None:
    bounds = (
        ("minimum", lambda v, b: v >= b, "at least"),
        ("maximum", lambda v, b: v <= b, "at most"),
        ("exclusiveMinimum", lambda v, b: v > b, "greater than"),
        ("exclusiveMaximum", lambda v, b: v < b, "less than"),
    )
    for key, holds, words in bounds:
        bound = schema.get(key)
        if isinstance(bound, (int, float)) and not isinstance(bound, bool):
            if not holds(value, bound):
                errors.append(f"{path}: must be {words} {bound}, got {short(value)}")


def check_array(value: list[Any], schema: dict[str, Any], path: str, errors: list[str]) -> None:
    min_items, max_items = schema.get("minItems"), schema.get("maxItems")
    if isinstance(min_items, int) and len(value) < min_items:
        errors.append(f"{path}: must have at least {min_items} items")
    if isinstance(max_items, int) and len(value) > max_items:
        errors.append(f"{path}: must have at most {max_items} items")
    items = schema.get("items")
    if isinstance(items, dict):
        for i, item in enumerate(value):
            validate(item, items, f"{path}[{i}]", errors)


def check_object(
    value: dict[str, Any], schema: dict[str, Any], path: str, errors: list[str]
) -> None:
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    required = schema.get("required")
    for name in required if isinstance(required, list) else []:
        if isinstance(name, str) and name not in value:
            hint = describe_property(properties.get(name) or {})
            hint = f" ({hint})" if hint else ""
            errors.append(f"{path}: missing required property '{name}'{hint}")
    extra = schema.get("additionalProperties", True)
    for name, item in value.items():
        child = f"{path}.{name}"
        if name in properties:
            validate(item, properties[name], child, errors)
        elif extra is False:
            known = ", ".join(sorted(properties)) or "none"
            errors.append(f"{path}: unknown property '{name}' (allowed: {known})")
        elif isinstance(extra, dict):
            validate(item, extra, child, errors)


def check_call(tool: str, parsed_ok: bool, arguments: Any, parse_error: str,
               index: dict[str, dict[str, Any]]) -> tuple[str, list[str]]:
    """(error headline or "", details) for one call."""
    if tool not in index:
        return f"unknown tool '{clip(tool, 80)}'", unknown_tool_details(tool, index)
    if not parsed_ok:
        return "arguments are not valid JSON", [
            parse_error,
            "pass one JSON object as a single quoted word: "
            f"bank call {tool} '{{\"key\": \"value\"}}'",
        ]
    if not isinstance(arguments, dict):
        details = [
            f"got {json_type_of(arguments)} {short(arguments)}; "
            "wrap the values in an object keyed by parameter name"
        ]
        if isinstance(arguments, str) and parse_arguments(arguments)[0]:
            details.append("the arguments look JSON-encoded twice: pass the object itself")
        return "arguments must be a JSON object", details
    if nesting_depth(arguments) > MAX_ARGUMENT_DEPTH:
        return "arguments nested too deeply", [
            f"more than {MAX_ARGUMENT_DEPTH} levels of objects and arrays; no tool needs that"
        ]
    errors: list[str] = []
    schema = dict(index[tool])
    schema.setdefault("type", "object")
    validate(arguments, schema, "arguments", errors)
    if not errors:
        return "", []
    count = len(errors)
    if count > MAX_ERRORS:
        errors = errors[:MAX_ERRORS] + [f"... and {count - MAX_ERRORS} more errors"]
    errors = [clip(error, MAX_ERROR_CHARS) for error in errors]
    plural = "" if count == 1 else "s"
    return f"invalid arguments for {tool} ({count} problem{plural})", errors


def normalise_name(name: str) -> str:
    """`bank__Get-Balance` -> `getbalance`; `tools.get_balance` -> `getbalance`.

    A `prefix__tool` name keeps what follows the first `__`; a dotted `module.tool` keeps the
    last part; then lower-case and drop `_` and `-`. The verifier matches names with it too.
    """
    name = name.strip()
    if "__" in name:
        name = name.split("__", 1)[1]
    name = name.rsplit(".", 1)[-1]
    return name.lower().replace("_", "").replace("-", "")


def unknown_tool_details(tool: str, index: dict[str, dict[str, Any]]) -> list[str]:
    import difflib

    names = sorted(index)
    by_normal = {normalise_name(n): n for n in names}
    close: list[str] = []
    if normalise_name(tool) in by_normal:
        close.append(by_normal[normalise_name(tool)])
    for match in difflib.get_close_matches(normalise_name(tool), list(by_normal), n=3, cutoff=0.6):
        if by_normal[match] not in close:
            close.append(by_normal[match])
    details = []
    if close:
        details.append("did you mean: {}?".format(", ".join(close)))
    details.append("available tools: {}".format(", ".join(names)))
    return details


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "..."

