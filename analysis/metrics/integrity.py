"""Tool-call integrity: the named ways a server's reply to a tool-calling request breaks.

One classifier, `classify`, applied per agent reply by the reading layer
(analysis/trial_rows.py) to what the call log records (`LLMCallRecord.tool_stream`: tools
offered, the calls as streamed, the stream's end; `finish_reason`) and what the trajectory
records (the reply's text, the tool schemas sent). A reply is classified when its request
succeeded and offered tools; every class is then 1 or 0 for it, and NaN for a reply it cannot
judge (a record written before `tool_stream`, a reply whose text or tool list the trajectory
lacks). Classes are not exclusive: a call cut by the length limit is usually also arguments
that are not JSON. `tc_any` is 1 when any class is (over the classes measured).

Each class's definition is its `Metric` below (the report's *Metric definitions* lists them);
docs/analysis.md explains them with examples. The per-level rates, intervals and the test
against the reference level are analysis/integrity.py's.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from analysis.metrics.base import Metric
from contracts.llm_calls import ToolStream

PREFIX = "tc_"


def _cls(name: str, header: str, text: str) -> Metric:
    return Metric(PREFIX + name, header, "share", text, column=header, better="lower")


FINISH_MISMATCH = _cls(
    "finish_mismatch", "finish reason mismatch",
    "finish_reason 'tool_calls' with no call in the reply, or a call ending 'stop' although "
    "tool_choice left the choice to the model (auto).")
MARKUP_IN_CONTENT = _cls(
    "markup_in_content", "markup in content",
    "The reply's text holds tool-call markup (<tool_call>, [TOOL_CALLS], <|python_tag|>, "
    "<function=, …): the server's tool parser did not take it.")
ARGUMENTS_NOT_JSON = _cls(
    "arguments_not_json", "arguments not JSON",
    "A call's arguments are not valid JSON.")
ARGUMENTS_NOT_OBJECT = _cls(
    "arguments_not_object", "arguments not an object",
    "A call's arguments are valid JSON but not an object.")
ARGUMENT_MISSING = _cls(
    "argument_missing", "required argument missing",
    "A call of a known tool lacks an argument its schema requires.")
ARGUMENT_WRONG_TYPE = _cls(
    "argument_wrong_type", "argument of wrong type",
    "A call of a known tool gives an argument a JSON type its schema does not allow.")
ARGUMENT_UNKNOWN = _cls(
    "argument_unknown", "unknown argument",
    "A call of a known tool gives an argument its schema does not declare (unless the "
    "schema allows additional properties).")
UNKNOWN_TOOL = _cls(
    "unknown_tool", "unknown tool",
    "A call names a tool the request did not offer (an empty name included).")
CUT_BY_LENGTH = _cls(
    "cut_by_length", "call cut by length",
    "finish_reason 'length' with a call whose arguments do not parse, with tool markup "
    "opened and not closed in the text, or with nothing delivered at all (no text, reasoning "
    "or call: the server's parser swallowed a call it could not finish).")
UNTERMINATED = _cls(
    "unterminated", "stream unterminated",
    "The stream ended without its [DONE] terminator or without a finish_reason.")
UNBALANCED_TAGS = _cls(
    "unbalanced_tags", "unbalanced tags",
    "The reply's text opens and closes a reasoning or tool tag (<think>, <tool_call>, …) a "
    "different number of times.")
DUPLICATE_CALL_ID = _cls(
    "duplicate_call_id", "duplicate call id",
    "Two calls of the reply share an id, or one call index carried two different ids.")
MISSING_CALL_ID = _cls(
    "missing_call_id", "missing call id or index",
    "A call without an id, a tool-call delta without an index, or call indices with a gap.")
ANY_COLUMN = PREFIX + "any"  # per reply: 1 when any class is
ANY = Metric("tool_call_error_rate", "Tool-call error rate", "share",
             "Classified agent replies with at least one integrity class / classified agent "
             "replies (agent requests that succeeded and offered tools).",
             aliases="--slo tool_call_error_rate", column="any class", better="lower")

CLASSES: tuple[Metric, ...] = (
    FINISH_MISMATCH, MARKUP_IN_CONTENT, ARGUMENTS_NOT_JSON, ARGUMENTS_NOT_OBJECT,
    ARGUMENT_MISSING, ARGUMENT_WRONG_TYPE, ARGUMENT_UNKNOWN, UNKNOWN_TOOL, CUT_BY_LENGTH,
    UNTERMINATED, UNBALANCED_TAGS, DUPLICATE_CALL_ID, MISSING_CALL_ID)
COLUMNS: tuple[str, ...] = (*(c.key for c in CLASSES), ANY_COLUMN)
METRICS = (*CLASSES, ANY)  # with N_REPLIES (below) in the registry
# Classes judged from the reply's text: unmeasured when the trajectory lacks it.
TEXT_CLASSES = frozenset({MARKUP_IN_CONTENT.key, UNBALANCED_TAGS.key, CUT_BY_LENGTH.key})
# Classes judged against the tool list the request sent: unmeasured without it.
SCHEMA_CLASSES = frozenset({ARGUMENT_MISSING.key, ARGUMENT_WRONG_TYPE.key,
                            ARGUMENT_UNKNOWN.key, UNKNOWN_TOOL.key})

# Tool-call markup of the common chat formats (hermes/Qwen, Mistral, Llama 3.x, functionary,
# Kimi K2, DeepSeek, Granite).
MARKUP = ("<tool_call>", "</tool_call>", "[TOOL_CALLS]", "<|python_tag|>", "<function=",
          "<|tool_calls_section_begin|>", "<|tool_call_begin|>", "<｜tool▁calls▁begin｜>",
          "<｜tool▁call▁begin｜>", "<|tool_call|>")
# (opening, closing) pairs whose counts must match in a reply's text.
TAG_PAIRS = (("<think>", "</think>"), ("<tool_call>", "</tool_call>"),
             ("<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"),
             ("<|tool_call_begin|>", "<|tool_call_end|>"),
             ("<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"))
_JSON_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}
# Python-flavoured names some tool schemas use for JSON Schema's types.
_TYPE_ALIASES = {"int": "integer", "float": "number", "double": "number", "bool": "boolean",
                 "str": "string", "list": "array", "dict": "object", "none": "null"}


def tool_schemas(definitions: Any) -> dict[str, dict[str, Any]]:
    """Tool name -> its parameters schema, from the tool list a request sent (OpenAI
    `{"type": "function", "function": {...}}` entries)."""
    out: dict[str, dict[str, Any]] = {}
    for entry in definitions if isinstance(definitions, list) else ():
        function = entry.get("function", entry) if isinstance(entry, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            parameters = function.get("parameters")
            out[function["name"]] = parameters if isinstance(parameters, dict) else {}
    return out


def is_classified(stream: ToolStream | None, ok: bool) -> bool:
    """Which replies the classes speak of: a request that succeeded and offered tools."""
    return ok and stream is not None and stream.offered > 0


def classify(stream: ToolStream, finish_reason: str | None, content: str | None,
             tools: Mapping[str, dict[str, Any]] | None, reasoning: bool = False
             ) -> dict[str, float]:
    """Every class (COLUMNS) for one classified reply: 1.0, 0.0, or NaN where the input it
    needs (`content`: the reply's text; `tools`: the schemas sent) is unknown; `reasoning`:
    the reply carried reasoning. Runs once per agent reply of every trial read, so it stays
    plain."""
    out = dict.fromkeys(COLUMNS, 0.0)
    calls = stream.calls
    # (kind, value) per call; None: its arguments were kept only in part, not judged
    parsed = [_parse(c.arguments) if c.arguments_chars <= len(c.arguments) else None
              for c in calls]
    kinds = {p[0] for p in parsed if p is not None}
    broken_args = "not_json" in kinds
    if (finish_reason == "tool_calls" and not calls) or (
            calls and finish_reason == "stop" and stream.choice in (None, "auto")):
        out[FINISH_MISMATCH.key] = 1.0
    out[ARGUMENTS_NOT_JSON.key] = float(broken_args)
    out[ARGUMENTS_NOT_OBJECT.key] = float("not_object" in kinds)
    out[UNTERMINATED.key] = float(not stream.done or finish_reason is None)
    if calls:
        ids = [i for c in calls for i in c.ids]
        out[DUPLICATE_CALL_ID.key] = float(len(ids) != len(set(ids))
                                           or any(len(c.ids) > 1 for c in calls))
        gap = len(calls) == stream.n_calls and sorted(c.index for c in calls) != list(
            range(len(calls)))
        out[MISSING_CALL_ID.key] = float(any(not c.ids for c in calls) or gap)
    if stream.unindexed_deltas:
        out[MISSING_CALL_ID.key] = 1.0
    if content is None:
        for key in TEXT_CLASSES:
            out[key] = math.nan
    else:
        unclosed = False
        if "<" in content or "[" in content:  # no tag without one of them
            out[MARKUP_IN_CONTENT.key] = float(any(tag in content for tag in MARKUP))
            counts = [(content.count(a), content.count(b)) for a, b in TAG_PAIRS]
            out[UNBALANCED_TAGS.key] = float(any(a != b for a, b in counts))
            unclosed = any(a > b for a, b in counts[1:])
        swallowed = not calls and not content.strip() and not reasoning
        out[CUT_BY_LENGTH.key] = float(finish_reason == "length"
                                       and (broken_args or unclosed or swallowed))
    if tools is None:
        for key in SCHEMA_CLASSES:
            out[key] = math.nan
    else:
        for call, p in zip(calls, parsed, strict=True):
            schema = tools.get(call.name)
            if schema is None:
                out[UNKNOWN_TOOL.key] = 1.0
            elif p is not None and p[0] == "object":
                for key in _schema_failures(p[1], schema):
                    out[key] = 1.0
    out[ANY_COLUMN] = float(1.0 in out.values())
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_no_constant)  # NaN/Infinity are not JSON


def _parse(text: str) -> tuple[str, Any]:
    """('object', value) | ('not_object', value) | ('not_json', None)."""
    try:
        value = _DECODER.decode(text)
    except (ValueError, RecursionError):
        return "not_json", None
    return ("object" if isinstance(value, dict) else "not_object"), value


def _schema_failures(arguments: dict[str, Any], schema: dict[str, Any]) -> set[str]:
    """Top-level checks only: which argument is missing, of a wrong type or undeclared. The
    verifier judges full validity (param_validity); these name how a reply broke."""
    found: set[str] = set()
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    required = schema.get("required")
    if isinstance(required, list) and any(isinstance(k, str) and k not in arguments
                                          for k in required):
        found.add(ARGUMENT_MISSING.key)
    open_ended = schema.get("additionalProperties", False) is not False
    for key, value in arguments.items():
        spec = properties.get(key)
        if spec is None:
            if properties and not open_ended:
                found.add(ARGUMENT_UNKNOWN.key)
            continue
        if isinstance(spec, dict) and not _type_allows(spec.get("type"), value):
            found.add(ARGUMENT_WRONG_TYPE.key)
    return found


def _type_allows(declared: Any, value: Any) -> bool:
    names = declared if isinstance(declared, list) else [declared]
    names = [_TYPE_ALIASES.get(n, n) for n in names if isinstance(n, str)]
    known = [n for n in names if n in _JSON_TYPES or n in ("integer", "number")]
    if not known:
        return True  # no type, or one this check does not know: nothing to say
    for name in known:
        if name == "integer":
            if isinstance(value, int) and not isinstance(value, bool):
                return True
            if isinstance(value, float) and value.is_integer():
                return True
        elif name == "number":
            if isinstance(value, int | float) and not isinstance(value, bool):
                return True
        elif isinstance(value, _JSON_TYPES[name]) and not (
                name != "boolean" and isinstance(value, bool)):
            return True
    return False


def summary_key(column: str) -> str:
    """The summary column of a per-reply column: the class's own key; `tc_any` ->
    `tool_call_error_rate`."""
    return ANY.key if column == ANY_COLUMN else column


N_REPLIES = Metric("n_tool_replies", "Classified replies", "replies",
                   "Agent replies the integrity classes judged: requests that succeeded and "
                   "offered tools.", column="classified replies", better=None)


def integrity_metrics(requests: pd.DataFrame) -> dict[str, float]:
    """Per group: each class's rate over the replies it could judge (NaN: none), the
    tool-call error rate, and how many replies were classified."""
    out: dict[str, float] = {}
    present = [c for c in COLUMNS if c in requests]
    for column in present:
        values = requests[column].dropna()
        out[summary_key(column)] = float(values.mean()) if len(values) else math.nan
    out[N_REPLIES.key] = float(requests[ANY_COLUMN].notna().sum()) if present else 0.0
    return out
