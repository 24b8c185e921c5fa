"""Finding a JSON value in what a model wrote: fenced, trailed by prose, or Python-flavoured."""

from __future__ import annotations

import ast
import json
import re
from typing import Any

_FENCE = re.compile(r"```(?:json|JSON|python)?\s*(.*?)```", re.S)


def first_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in `text`, or None.

    Tries, in order: the whole text, each fenced block, then every `{` that starts a balanced
    object. Single-quoted Python dicts (`{'a': True}`) are accepted as a last resort because
    small models write them often.
    """
    candidates = [text.strip()]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(text)]
    for candidate in candidates:
        value = loads_lenient(candidate)
        if isinstance(value, dict):
            return value
    for start in (i for i, ch in enumerate(text) if ch == "{"):
        end = balanced_end(text, start)
        if end is not None:
            value = loads_lenient(text[start:end])
            if isinstance(value, dict):
                return value
    return None


def loads_lenient(text: str) -> Any:
    """json.loads, then Python literal syntax; None when neither parses."""
    if not text:
        return None
    try:
        return json.loads(text)
    except (json.JSONDecodeError, ValueError):
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def balanced_end(text: str, start: int) -> int | None:
    """Index just past the `}` closing the `{` at `start`, honouring JSON strings."""
    depth = 0
    in_string: str | None = None
    escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == in_string:
                in_string = None
            continue
        if ch in "\"'":
            in_string = ch
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i + 1
    return None
