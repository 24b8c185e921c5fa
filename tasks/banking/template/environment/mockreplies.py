"""The mock bank's replies: plausible, deterministic values shaped by a tool's response schema.

The same tool and arguments always get the same reply (the random generator is seeded from
them); property names steer the kind of value (dates, amounts, ids, names). Standard library
only; runs on Python 3.8+.
"""

from __future__ import annotations

import json
import math
import re

from toolschema import matches_type

TYPE_CHECKING = False  # typing and random are imported by type checkers only (start-up cost)
if TYPE_CHECKING:
    import random
    from typing import Any

MAX_RESPONSE_DEPTH = 6

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



def mock_response(tool: str, arguments: dict[str, Any], responses: Any) -> Any:
    """The reply to a valid call; `responses` is responses.json's content (tool -> schema)."""
    schema = responses.get(tool) if isinstance(responses, dict) else None
    if not isinstance(schema, dict) or not schema:
        return {"status": "success", "tool": tool}
    import random

    return mock_value(schema, "", random.Random(response_seed(tool, arguments)), arguments)
