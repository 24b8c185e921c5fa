"""The mock bank: the only way an agent acts on the customer's behalf inside a task.

    bank tools                                  print the tool schemas (OpenAI function format)
    bank call <tool> ['<json args>'] [--attempt N]
                                                validate, record one intent, print a mock reply
    bank accept <N>                             record that self-evaluation attempt N was kept

Nothing is ever executed: a call is a recorded decision plus a plausible, deterministic reply
shaped by the tool's response schema. `'<json args>'` may be `-` to read the arguments from
stdin; left out, it means `{}`.

Files: tools.json and responses.json beside this script (env BANK_DIR overrides); the intents
log /logs/agent/intents.jsonl (env BANK_INTENTS overrides). Attempt default: env BANK_ATTEMPT,
else 1. Exit codes: 0 ok, 2 call rejected (unknown tool, bad JSON, invalid arguments),
64 usage error, 74 intents log not writable, 78 tools.json unreadable (without a readable
responses.json, replies are only generic).

Standard library only; runs on Python 3.8+.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import time

# Each call is a fresh process, so start-up is most of its cost: modules only some paths need
# (difflib, datetime, random, fcntl, the hash) are imported where they are used, and typing
# only by type checkers.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import random
    from typing import Any

EXIT_OK = 0
EXIT_REJECTED = 2
EXIT_USAGE = 64
EXIT_IOERR = 74
EXIT_CONFIG = 78

DEFAULT_INTENTS = "/logs/agent/intents.jsonl"
# Bounds that keep one runaway call from bloating the log the verifier has to read.
MAX_ARGUMENTS_BYTES = 16 * 1024
MAX_TOOL_NAME_CHARS = 256
MAX_ERRORS = 50
MAX_RESPONSE_DEPTH = 6
MAX_ARGUMENT_DEPTH = 64
MAX_ERROR_CHARS = 500

USAGE = (
    "usage: bank tools\n"
    "       bank call <tool> ['<json args>'|-] [--attempt N]\n"
    "       bank accept <N>\n"
)


class UsageError(Exception):
    pass


class ConfigError(Exception):
    pass


# ---------------------------------------------------------------- configuration


def bank_dir() -> str:
    return os.environ.get("BANK_DIR") or os.path.dirname(os.path.abspath(__file__))


def intents_path() -> str:
    return os.environ.get("BANK_INTENTS") or DEFAULT_INTENTS


def load_json_file(name: str) -> Any:
    path = os.path.join(bank_dir(), name)
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc


def load_tools() -> list[dict[str, Any]]:
    tools = load_json_file("tools.json")
    if not isinstance(tools, list):
        raise ConfigError("tools.json must hold a JSON list of function tools")
    return tools


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


# ---------------------------------------------------------------- argument parsing


def parse_positive_int(text: str, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"{what} must be a positive integer, got {text!r}") from None
    if value < 1:
        raise UsageError(f"{what} must be a positive integer, got {text!r}")
    return value


def split_call_args(argv: list[str]) -> tuple[str, str, int]:
    """`<tool> [json|-] [--attempt N]` -> (tool, raw json, attempt)."""
    positional: list[str] = []
    attempt_text: str | None = None
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--attempt":
            if i + 1 >= len(argv):
                raise UsageError("--attempt needs a value")
            attempt_text = argv[i + 1]
            i += 2
            continue
        if arg.startswith("--attempt="):
            attempt_text = arg.split("=", 1)[1]
        else:
            positional.append(arg)
        i += 1
    if not positional:
        raise UsageError("call needs a tool name")
    # JSON the shell split into several words is still this call's arguments: rejoin them and
    # let parsing judge, so the call is recorded (and answered) like any other bad JSON.
    raw = " ".join(positional[1:]) if len(positional) > 1 else "{}"
    if raw == "-":
        raw = sys.stdin.read()
    if attempt_text is None:
        env_attempt = os.environ.get("BANK_ATTEMPT")
        attempt = parse_positive_int(env_attempt, "BANK_ATTEMPT") if env_attempt else 1
    else:
        attempt = parse_positive_int(attempt_text, "--attempt")
    return positional[0], raw, attempt


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


# ---------------------------------------------------------------- mock responses

WORDS = ("pending review", "processed", "scheduled", "confirmed", "on file", "updated")
FIRST_NAMES = ("Alex", "Maria", "Jordan", "Priya", "Samuel", "Lena")
LAST_NAMES = ("Rivera", "Chen", "Okafor", "Novak", "Haddad", "Larsen")


def response_seed(tool: str, arguments: Any) -> int:
    canonical = json.dumps([tool, arguments], sort_keys=True, ensure_ascii=True)
    return int(sha256(canonical.encode("utf-8")).hexdigest()[:16], 16)


def sha256(data: bytes) -> Any:
    """hashlib.sha256 without loading OpenSSL (a few ms per call): CPython's built-in SHA-2,
    as the random module itself takes it; hashlib where a build lacks it."""
    try:
        from _sha2 import sha256 as builtin  # Python 3.12+
    except ImportError:
        try:
            from _sha256 import sha256 as builtin  # Python 3.8-3.11
        except ImportError:
            from hashlib import sha256 as builtin
    return builtin(data)


def mock_value(schema: Any, name: str, rng: random.Random, arguments: dict[str, Any],
               depth: int = 0) -> Any:
    """A plausible value for `schema`; `name` (the property name) steers the kind of string."""
    if not isinstance(schema, dict):
        schema = {}
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return rng.choice(schema["enum"])
    if "const" in schema:
        return schema["const"]
    declared = schema.get("type")
    if isinstance(declared, list):
        declared = next((t for t in declared if t != "null"), "null")
    if declared is None:
        declared = "object" if "properties" in schema else "array" if "items" in schema else (
            "string")
    # Echo what the caller said when the reply names the same field, so replies stay consistent.
    if name in arguments and matches_type(arguments[name], declared) and depth <= 1:
        return arguments[name]
    if declared == "object":
        if depth >= MAX_RESPONSE_DEPTH:
            return {}
        props = schema.get("properties")
        props = props if isinstance(props, dict) else {}
        return {key: mock_value(sub, key, rng, arguments, depth + 1) for key, sub in props.items()}
    if declared == "array":
        if depth >= MAX_RESPONSE_DEPTH:
            return []
        singular = name[:-1] if name.endswith("s") else name
        low, high = schema.get("minItems"), schema.get("maxItems")
        low = low if isinstance(low, int) and 0 <= low <= 10 else 1
        high = high if isinstance(high, int) and high >= low else max(low, 3)
        count = rng.randint(low, min(high, max(low, 3)))
        return [mock_value(schema.get("items"), singular, rng, {}, depth + 1) for _ in range(count)]
    if declared in ("integer", "number"):
        return mock_numeric(schema, declared, name.lower(), rng)
    if declared == "boolean":
        return rng.random() < 0.8
    if declared == "null":
        return None
    return mock_string(name.lower(), schema.get("format"), rng)


def mock_numeric(schema: dict[str, Any], declared: str, name: str, rng: random.Random) -> Any:
    """A number shaped by the property name, kept inside the schema's bounds if it has any."""
    low = numeric_bound(schema, "minimum", "exclusiveMinimum")
    high = numeric_bound(schema, "maximum", "exclusiveMaximum")
    if low is not None and high is not None and low <= high:
        if declared == "integer":
            return rng.randint(math.ceil(low), math.floor(high)) if math.ceil(low) <= high else (
                math.ceil(low))
        return round(rng.uniform(low, high), 2)
    value = mock_integer(name, rng) if declared == "integer" else mock_number(name, rng)
    if low is not None and value < low:
        value = math.ceil(low) if declared == "integer" else low
    if high is not None and value > high:
        value = math.floor(high) if declared == "integer" else high
    return value


def numeric_bound(schema: dict[str, Any], inclusive: str, exclusive: str) -> float | None:
    for key in (inclusive, exclusive):
        bound = schema.get(key)
        if isinstance(bound, (int, float)) and not isinstance(bound, bool):
            return bound
    return None


def mock_integer(name: str, rng: random.Random) -> int:
    if "year" in name:
        return rng.randint(2020, 2027)
    if "month" in name:
        return rng.randint(1, 12)
    if "day" in name:
        return rng.randint(1, 28)
    if "score" in name:
        return rng.randint(580, 820)
    if "count" in name or name.startswith("num") or "number_of" in name:
        return rng.randint(1, 12)
    return rng.randint(1, 1000)


def mock_number(name: str, rng: random.Random) -> float:
    if "rate" in name or "apr" in name or "percent" in name or "interest" in name:
        return round(rng.uniform(0.5, 9.5), 2)
    if "fee" in name:
        return round(rng.uniform(0, 45), 2)
    return round(rng.uniform(10, 12000), 2)


def mock_string(name: str, fmt: Any, rng: random.Random) -> str:
    date = f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    clock = f"{rng.randint(8, 19):02d}:{rng.choice((0, 15, 30, 45)):02d}:00Z"
    if fmt == "date-time" or "timestamp" in name or name.endswith("_at") or "datetime" in name:
        return f"{date}T{clock}"
    if fmt == "date" or "date" in name:
        return date
    if fmt == "email" or "email" in name:
        first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
        return f"{first.lower()}.{last.lower()}@example.com"
    if "phone" in name:
        return f"+1-555-{rng.randint(0, 9999):04d}"
    if name == "id" or name.endswith("_id") or "reference" in name or "confirmation" in name:
        prefix = re.sub(r"[^a-z]", "", name.replace("_id", ""))[:3].upper() or "REF"
        return f"{prefix}-{rng.randint(0, 999999):06d}"
    if "account_number" in name or "iban" in name or name.endswith("number"):
        return f"{rng.randint(0, 9999999999):010d}"
    if "currency" in name:
        return rng.choice(("USD", "EUR", "GBP"))
    if "status" in name:
        return rng.choice(("completed", "pending", "active"))
    if name.endswith("name"):
        return f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"
    if "time" in name:
        return clock[:5]
    if "url" in name or fmt == "uri":
        return f"https://bank.example.com/doc/{rng.randint(0, 999999):06d}"
    if "address" in name:
        return f"{rng.randint(1, 400)} Harbour Street, Springfield"
    if "message" in name or "description" in name or "note" in name or "summary" in name:
        return f"Request {rng.choice(WORDS)}."
    if "type" in name or "category" in name:
        return rng.choice(("standard", "premium", "basic"))
    return "{} {}".format(name.replace("_", " ").strip() or "value", rng.choice(WORDS))


def mock_response(tool: str, arguments: dict[str, Any]) -> Any:
    try:
        responses = load_json_file("responses.json")
    except ConfigError:
        responses = {}
    schema = responses.get(tool) if isinstance(responses, dict) else None
    if not isinstance(schema, dict) or not schema:
        return {"status": "success", "tool": tool}
    import random

    return mock_value(schema, "", random.Random(response_seed(tool, arguments)), arguments)


# ---------------------------------------------------------------- the intents log


def append_record(record: dict[str, Any], with_seq: bool) -> dict[str, Any]:
    """Append one JSON line under an exclusive lock; `seq` is assigned while the lock is held."""
    import fcntl

    path = intents_path()
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    with open(path, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            handle.seek(0)
            content = handle.read()
            if with_seq:
                record = dict(record, seq=last_seq(content) + 1)
                record = {key: record[key] for key in _ordered_keys(record)}
            line = to_utf8(json.dumps(record, ensure_ascii=False) + "\n")
            if content and not content.endswith(b"\n"):
                line = b"\n" + line  # a torn line from a killed writer stays on its own line
            handle.seek(0, os.SEEK_END)
            handle.write(line)
            handle.flush()
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    return record


def _ordered_keys(record: dict[str, Any]) -> list[str]:
    first = ["seq", "attempt", "tool", "arguments", "valid", "errors", "ts"]
    return [k for k in first if k in record] + [k for k in record if k not in first]


def last_seq(content: bytes) -> int:
    """Highest `seq` in the log so far (calls are appended in seq order, so scan from the end)."""
    for raw in reversed(content.splitlines()):
        try:
            entry = json.loads(raw.decode("utf-8"))
        except ValueError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("seq"), int):
            return entry["seq"]
    return 0


def intent_record(tool: str, attempt: int, arguments: Any, errors: list[str]) -> dict[str, Any]:
    record: dict[str, Any] = {
        "attempt": attempt,
        "tool": clip(tool, MAX_TOOL_NAME_CHARS),
        "arguments": arguments,
        "valid": not errors,
        "errors": errors,
        "ts": time.time(),
    }
    if len(tool) > MAX_TOOL_NAME_CHARS:
        record["tool_truncated"] = True
    encoded = to_utf8(json.dumps(arguments, ensure_ascii=False))
    size = len(encoded)
    if size > MAX_ARGUMENTS_BYTES:
        head = encoded[:MAX_ARGUMENTS_BYTES].decode("utf-8", "ignore")
        record["arguments"] = head
        record["arguments_truncated"] = True
        record["arguments_bytes"] = size
    return record


# ---------------------------------------------------------------- commands


def to_utf8(text: str) -> bytes:
    """UTF-8, with undecodable command-line bytes (lone surrogates) kept as JSON escapes."""
    return text.encode("utf-8", "backslashreplace")


def emit(payload: Any) -> None:
    text = json.dumps(payload, indent=2, ensure_ascii=False) + "\n"
    stream = getattr(sys.stdout, "buffer", None)
    if stream is None:  # a replaced stdout (embedding, tests) takes text
        sys.stdout.write(text)
        return
    sys.stdout.flush()
    stream.write(to_utf8(text))
    stream.flush()


def command_tools(argv: list[str]) -> int:
    if argv:
        raise UsageError("tools takes no arguments")
    emit(load_tools())
    return EXIT_OK


def command_call(argv: list[str]) -> int:
    tool, raw, attempt = split_call_args(argv)
    parsed_ok, arguments, parse_error = parse_arguments(raw)
    try:
        index = tool_index(load_tools())
    except ConfigError as exc:
        # Keep the decision on record even though it cannot be checked.
        append_record(intent_record(tool, attempt, arguments, [f"bank misconfigured: {exc}"]),
                      with_seq=True)
        raise
    headline, details = check_call(tool, parsed_ok, arguments, parse_error, index)
    errors = [headline] + details if headline else []
    record = append_record(intent_record(tool, attempt, arguments, errors), with_seq=True)
    if headline:
        emit({"error": headline, "details": details, "seq": record["seq"]})
        return EXIT_REJECTED
    emit(mock_response(tool, arguments))
    return EXIT_OK


def command_accept(argv: list[str]) -> int:
    if len(argv) != 1:
        raise UsageError("accept takes exactly one attempt number")
    attempt = parse_positive_int(argv[0], "attempt")
    append_record({"accept": attempt, "ts": time.time()}, with_seq=False)
    emit({"accepted": attempt})
    return EXIT_OK


COMMANDS = {"tools": command_tools, "call": command_call, "accept": command_accept}


def main(argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help", "help"):
        sys.stdout.write(__doc__ or USAGE)
        return EXIT_OK
    try:
        if not argv:
            raise UsageError("no command given")
        command = COMMANDS.get(argv[0])
        if command is None:
            raise UsageError(f"unknown command {argv[0]!r}")
        return command(argv[1:])
    except UsageError as exc:
        sys.stderr.write(f"bank: {exc}\n{USAGE}")
        return EXIT_USAGE
    except ConfigError as exc:
        sys.stderr.write(f"bank: {exc}\n")
        return EXIT_CONFIG
    except OSError as exc:
        sys.stderr.write(f"bank: cannot write the intents log {intents_path()}: {exc}\n")
        return EXIT_IOERR


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
