"""Guided decoding for the llama.cpp worker: Dynamo's constraints as llguidance grammars.

The Dynamo frontend asks for constrained output in `sampling_options.guided_decoding`:
`json` (a JSON schema, e.g. from `response_format`), `structural_tag` (xgrammar-style tags; the
hermes parser's `<tool_call>` wrapper around each tool's argument schema for `tool_choice`
named or "required"), `choice` or `grammar`. The xllamacpp wheel's llama.cpp is built with
LLGuidance, which takes a Lark-like grammar whose rules may embed a JSON schema (`%json {…}`):
schemas are compiled in native code, and the token mask costs microseconds instead of a Python
pass over the vocabulary. A client's own `grammar` (GBNF) is passed through unchanged.
"""

from __future__ import annotations

import json
from typing import Any

from dynamo.llm.exceptions import InvalidArgument

HEADER = "%llguidance {}"


def closed(schema: Any) -> Any:
    """The schema with `additionalProperties: false` on every object that leaves it open.

    LLGuidance follows JSON Schema, where an absent `additionalProperties` allows any extra key;
    a tool's argument schema means "these keys", and a small model otherwise invents more.
    An object that names its keys only in `anyOf`/`oneOf`/`allOf` branches (the frontend's JSON
    guide for a forced call: one branch per tool) stays open: `additionalProperties` counts only
    the object's own `properties`, so closing it would forbid every key; the branches are closed.
    """
    if isinstance(schema, list):
        return [closed(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: closed(v) for k, v in schema.items()}
    branches = any(k in out for k in ("anyOf", "oneOf", "allOf"))
    is_object = "properties" in out or (out.get("type") == "object" and not branches)
    if is_object and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


def checked_schema(schema: Any) -> dict[str, Any] | bool:
    """Parse and sanity-check a JSON schema before it reaches LLGuidance.

    LLGuidance logs a schema it cannot compile and then leaves the output unconstrained, so the
    mistakes a client can make (not JSON, not an object, a non-string `type`) are refused here.
    """
    if isinstance(schema, str):
        try:
            schema = json.loads(schema)
        except json.JSONDecodeError as exc:
            raise InvalidArgument(f"guided decoding: the JSON schema is not JSON: {exc}") from None
    if isinstance(schema, bool):
        return schema
    if not isinstance(schema, dict):
        raise InvalidArgument("guided decoding: a JSON schema must be an object")
    _check_types(schema)
    # Compact JSON: flexible whitespace lets a small model spend its budget on blank lines.
    return {**closed(schema), "x-guidance": {"whitespace_flexible": False}}


def _check_types(node: Any) -> None:
    if isinstance(node, list):
        for item in node:
            _check_types(item)
    elif isinstance(node, dict):
        kind = node.get("type")
        ok = kind is None or isinstance(kind, str) or (
            isinstance(kind, list) and all(isinstance(k, str) for k in kind)
        )
        if not ok:
            raise InvalidArgument(f"guided decoding: bad JSON schema type {kind!r}")
        for key, value in node.items():
            if key not in ("enum", "const", "default", "examples"):
                _check_types(value)


class GrammarBuilder:
    """Builds one LLGuidance grammar from JSON schemas and xgrammar-style structural tags."""

    def __init__(self) -> None:
        self.rules: list[str] = []

    def rule(self, body: str) -> str:
        name = f"r{len(self.rules) + 1}"
        self.rules.append(f"{name}: {body}")
        return name

    @staticmethod
    def literal(text: str) -> str:
        return json.dumps(text, ensure_ascii=False)  # Lark string literals use JSON escapes

    def schema(self, schema: Any) -> str:
        return self.rule("%json " + json.dumps(checked_schema(schema), ensure_ascii=False))

    def tag(self, node: dict[str, Any]) -> str:
        parts = [
            self.literal(node.get("begin", "")),
            self.fmt(node["content"]),
            self.literal(node.get("end", "")),
        ]
        return self.rule(" ".join(p for p in parts if p != '""'))

    def tags(self, node: dict[str, Any], separator: str) -> str:
        one = self.rule(" | ".join(self.tag(t) for t in node["tags"]))
        if node.get("stop_after_first"):
            return one
        sep = self.literal(separator) + " " if separator else ""
        return self.rule(f"{one} ({sep}{one})*")

    def fmt(self, node: dict[str, Any]) -> str:
        """The rule name for one structural-tag format node."""
        kind = node.get("type")
        if kind == "structural_tag":
            return self.fmt(node["format"])
        if kind == "const_string":
            return self.rule(self.literal(node["value"]))
        if kind == "json_schema":
            return self.schema(node["json_schema"])
        if kind == "sequence":
            return self.rule(" ".join(self.fmt(e) for e in node["elements"]))
        if kind == "or":
            return self.rule(" | ".join(self.fmt(e) for e in node["elements"]))
        if kind == "tag":
            return self.tag(node)
        if kind == "triggered_tags":
            # Only reached with at_least_one: the reply is tool calls and nothing else.
            return self.tags(node, "\n")
        if kind == "tags_with_separator":
            return self.tags(node, node.get("separator", ""))
        raise InvalidArgument(f"structural tag format '{kind}' is not supported by llama.cpp")

    def finish(self, root: str) -> str:
        return "\n".join([HEADER, f"start: {root}", *self.rules]) + "\n"


def structural_grammar(tag: dict[str, Any]) -> str | None:
    """The grammar for a structural tag, or None where it only permits (never requires) one."""
    fmt = tag.get("format", tag) if tag.get("type") == "structural_tag" else tag
    if fmt.get("type") == "any_text":
        return None
    if fmt.get("type") == "triggered_tags" and not fmt.get("at_least_one"):
        # tool_choice "auto": free text that may contain tool calls; left unconstrained.
        return None
    builder = GrammarBuilder()
    return builder.finish(builder.fmt(fmt))


def schema_grammar(schema: Any) -> str:
    builder = GrammarBuilder()
    return builder.finish(builder.schema(schema))


def guided_grammar(guided: dict[str, Any] | None) -> str | None:
    """The grammar text for the frontend's guided-decoding request, or None."""
    if not guided:
        return None
    if guided.get("regex") is not None:
        raise InvalidArgument("guided decoding 'regex' is not supported by llama.cpp")
    if guided.get("json") is not None:
        return schema_grammar(guided["json"])
    if guided.get("structural_tag") is not None:
        tag = guided["structural_tag"]
        try:
            tag = json.loads(tag) if isinstance(tag, str) else tag
        except json.JSONDecodeError as exc:
            raise InvalidArgument(f"guided decoding: structural tag is not JSON: {exc}") from None
        return structural_grammar(tag)
    if guided.get("choice"):
        builder = GrammarBuilder()
        alts = " | ".join(builder.literal(str(c)) for c in guided["choice"] if c is not None)
        return builder.finish(alts)
    if guided.get("grammar"):
        return str(guided["grammar"])
    return None
