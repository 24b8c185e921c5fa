"""Guided decoding for the llama.cpp worker: Dynamo's constraints as llama.cpp GBNF grammars.

The Dynamo frontend asks for constrained output in `sampling_options.guided_decoding`:
`json` (a JSON schema, e.g. from `response_format`), `structural_tag` (xgrammar-style tags; the
hermes parser's `<tool_call>` wrapper around each tool's argument schema for `tool_choice`
named or "required"), `choice` or `grammar`. llama.cpp understands GBNF; JSON schemas go
through llama-cpp-python's own schema converter.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from dynamo.llm.exceptions import InvalidArgument


@functools.lru_cache(maxsize=64)
def grammar_from_gbnf(gbnf: str) -> Any:
    from llama_cpp import LlamaGrammar

    return LlamaGrammar.from_string(gbnf, verbose=False)


class GrammarBuilder:
    """Builds one GBNF grammar from JSON schemas and xgrammar-style structural tags.

    One llama.cpp SchemaConverter holds every rule, so rules of different schemas that share a
    name (`space`, property rules) are kept apart by its own de-duplication.
    """

    def __init__(self) -> None:
        from llama_cpp.llama_grammar import SchemaConverter

        self.conv = SchemaConverter(
            prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False
        )
        self.n = 0

    def rule(self, body: str) -> str:
        self.n += 1
        return self.conv._add_rule(f"r{self.n}", body)

    def literal(self, text: str) -> str:
        return self.conv._format_literal(text)

    def schema(self, schema: Any) -> str:
        if isinstance(schema, str):
            schema = json.loads(schema)
        if schema is True or schema == {}:
            schema = {}
        self.n += 1
        return self.conv.visit(self.conv.resolve_refs(schema, "request"), f"schema{self.n}")

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
        return self.rule(f"{one} ({self.literal(separator)} {one})*")

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
        self.conv._add_rule("root", root)
        return self.conv.format_grammar()


def structural_gbnf(tag: dict[str, Any]) -> str | None:
    """GBNF for a structural tag, or None where it only permits (never requires) structure."""
    fmt = tag.get("format", tag) if tag.get("type") == "structural_tag" else tag
    if fmt.get("type") == "any_text":
        return None
    if fmt.get("type") == "triggered_tags" and not fmt.get("at_least_one"):
        # tool_choice "auto": free text that may contain tool calls. Llama.generate offers no
        # lazily triggered grammar (one that starts at "<tool_call>"), so this runs unconstrained.
        return None
    builder = GrammarBuilder()
    return builder.finish(builder.fmt(fmt))


def schema_gbnf(schema: Any) -> str:
    builder = GrammarBuilder()
    return builder.finish(builder.schema(schema))


def guided_grammar(guided: dict[str, Any] | None) -> Any | None:
    """A llama.cpp grammar for the frontend's guided-decoding request, or None."""
    if not guided:
        return None
    if guided.get("regex") is not None:
        raise InvalidArgument("guided decoding 'regex' is not supported by llama.cpp")
    try:
        if guided.get("json") is not None:
            gbnf: str | None = schema_gbnf(guided["json"])
        elif guided.get("structural_tag") is not None:
            tag = guided["structural_tag"]
            gbnf = structural_gbnf(json.loads(tag) if isinstance(tag, str) else tag)
        elif guided.get("choice"):
            alts = " | ".join(json.dumps(str(c)) for c in guided["choice"] if c is not None)
            gbnf = f"root ::= {alts}"
        elif guided.get("grammar"):
            gbnf = str(guided["grammar"])
        else:
            return None
        return None if gbnf is None else grammar_from_gbnf(gbnf)
    except InvalidArgument:
        raise
    except Exception as exc:  # a constraint llama.cpp cannot express is the client's problem
        raise InvalidArgument(f"guided decoding could not be compiled: {exc}") from None
