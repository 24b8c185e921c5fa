"""FAULT INJECTION for tests and benchmarks — not a model server's behaviour.

Breaks a streamed chat-completion reply that carries tool calls in one named way, one per
tool-call integrity class (analysis/metrics/integrity.py), the way serving engines have been
reported to break them under load: calls emptied or left as text, arguments cut or corrupted,
ids lost or repeated, the stream left without its terminator. Used by the fault-injecting test
proxy (tests/support/fault_proxy.py, on replies of the real Dynamo frontend) and by
benchmarks/tool_call_integrity.py (on replies shaped like the frontend's).

    corrupt(body, "arguments_not_json", tools) -> the reply's new bytes, or None when this
    reply cannot carry the fault (no tool call; no required argument to drop; …)

The calls are re-emitted whole, one delta each, in the chunk where the first call began;
every other chunk passes as it came.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

# The fault names are the class names (without the `tc_` of their columns).
FAULTS = ("finish_mismatch", "markup_in_content", "arguments_not_json", "arguments_not_object",
          "argument_missing", "argument_wrong_type", "argument_unknown", "unknown_tool",
          "cut_by_length", "unterminated", "unbalanced_tags", "duplicate_call_id",
          "missing_call_id")
UNDECLARED_ARGUMENT = "unexpected_field"


class _Reply:
    """A reply's calls merged, and what wraps them, ready to be changed and written back."""

    def __init__(self, events: list[bytes]) -> None:
        self.events = events
        self.chunks: dict[int, dict[str, Any]] = {}  # event position -> parsed chunk
        self.calls: list[dict[str, Any]] = []
        self.first: int | None = None  # event holding the first call delta
        self.text = ""  # put before the calls, in their chunk
        self.finish: str | None = None
        self.done = True
        slots: dict[int, dict[str, Any]] = {}
        for pos, event in enumerate(events):
            if not event.startswith(b"data: {"):
                continue
            chunk = json.loads(event[len(b"data: "):])
            self.chunks[pos] = chunk
            for choice in chunk.get("choices") or []:
                if choice.get("finish_reason"):
                    self.finish = choice["finish_reason"]
                for tc in (choice.get("delta") or {}).get("tool_calls") or []:
                    self.first = pos if self.first is None else self.first
                    slot = slots.setdefault(tc.get("index") or 0, {"name": "", "arguments": ""})
                    if tc.get("id"):
                        slot["id"] = tc["id"]
                    fn = tc.get("function") or {}
                    slot["name"] += fn.get("name") or ""
                    slot["arguments"] += fn.get("arguments") or ""
        self.calls = [slots[i] for i in sorted(slots)]

    def write(self) -> bytes:
        out = []
        for pos, event in enumerate(self.events):
            if event.startswith(b"data: [DONE]") and not self.done:
                continue
            chunk = self.chunks.get(pos)
            if chunk is None:
                out.append(event)
                continue
            for choice in chunk.get("choices") or []:
                delta = choice.setdefault("delta", {})
                delta.pop("tool_calls", None)
                if pos == self.first:
                    if self.text:
                        delta["content"] = (delta.get("content") or "") + self.text
                    if self.calls:
                        delta["tool_calls"] = [_delta(i, call)
                                               for i, call in enumerate(self.calls)]
                if choice.get("finish_reason"):
                    choice["finish_reason"] = self.finish
            out.append(b"data: " + json.dumps(chunk).encode())
        return b"\n\n".join(out)


def _delta(index: int, call: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"index": index, "type": "function",
                           "function": {"name": call["name"], "arguments": call["arguments"]}}
    if call.get("id"):
        out["id"] = call["id"]
    return out


def _schemas(tools: list[dict[str, Any]] | None) -> dict[str, dict[str, Any]]:
    out = {}
    for entry in tools or []:
        fn = entry.get("function", entry) if isinstance(entry, dict) else {}
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            out[fn["name"]] = fn.get("parameters") or {}
    return out


def _arguments(call: dict[str, Any]) -> dict[str, Any] | None:
    try:
        value = json.loads(call["arguments"] or "{}")
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _other_type(value: Any) -> Any:
    """A value of another JSON type than `value`'s."""
    if isinstance(value, bool):
        return "yes"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return 12345678
    if isinstance(value, list):
        return {"items": value}
    return [value]


def _finish_mismatch(r: _Reply, schemas: dict) -> bool:
    r.calls, r.finish = [], "tool_calls"  # the calls emptied, the finish reason kept
    return True


def _markup_in_content(r: _Reply, schemas: dict) -> bool:
    r.text = "".join("<tool_call>\n" + json.dumps({"name": c["name"],
                                                   "arguments": _arguments(c) or {}})
                     + "\n</tool_call>" for c in r.calls)
    r.calls = []
    if r.finish == "tool_calls":  # the server saw text, and ended it as text
        r.finish = "stop"
    return True


def _arguments_not_json(r: _Reply, schemas: dict) -> bool:
    r.calls[0]["arguments"] = (r.calls[0]["arguments"] or "{}")[:-1]  # the closing brace lost
    return True


def _arguments_not_object(r: _Reply, schemas: dict) -> bool:
    r.calls[0]["arguments"] = "[" + (r.calls[0]["arguments"] or "{}") + "]"
    return True


def _argument_missing(r: _Reply, schemas: dict) -> bool:
    for call in r.calls:
        args = _arguments(call)
        required = (schemas.get(call["name"]) or {}).get("required") or []
        present = [k for k in required if args is not None and k in args]
        if present:
            del args[present[0]]
            call["arguments"] = json.dumps(args)
            return True
    return False


def _argument_wrong_type(r: _Reply, schemas: dict) -> bool:
    for call in r.calls:
        args = _arguments(call)
        properties = (schemas.get(call["name"]) or {}).get("properties") or {}
        typed = [k for k in args or {} if isinstance(properties.get(k), dict)
                 and "type" in properties[k]]
        if typed:
            args[typed[0]] = _other_type(args[typed[0]])
            call["arguments"] = json.dumps(args)
            return True
    return False


def _argument_unknown(r: _Reply, schemas: dict) -> bool:
    args = _arguments(r.calls[0])
    if args is None:
        return False
    args[UNDECLARED_ARGUMENT] = True
    r.calls[0]["arguments"] = json.dumps(args)
    return True


def _unknown_tool(r: _Reply, schemas: dict) -> bool:
    r.calls[0]["name"] += "_v2"
    return True


def _cut_by_length(r: _Reply, schemas: dict) -> bool:
    args = r.calls[-1]["arguments"] or "{}"
    r.calls[-1]["arguments"] = args[: max(1, len(args) // 2)]
    r.finish = "length"
    return True


def _unterminated(r: _Reply, schemas: dict) -> bool:
    r.done = False
    return True


def _unbalanced_tags(r: _Reply, schemas: dict) -> bool:
    r.text = "<think>The customer wants the balance first."  # never closed
    return True


def _duplicate_call_id(r: _Reply, schemas: dict) -> bool:
    if not r.calls[0].get("id"):
        return False
    r.calls.append(copy.deepcopy(r.calls[0]))  # the same call streamed twice, one id
    return True


def _missing_call_id(r: _Reply, schemas: dict) -> bool:
    for call in r.calls:
        call.pop("id", None)
    return True


_APPLY: dict[str, Callable[[_Reply, dict], bool]] = {
    name: globals()[f"_{name}"] for name in FAULTS}


def corrupt(body: bytes, fault: str, tools: list[dict[str, Any]] | None = None
            ) -> bytes | None:
    """`body` (a whole SSE reply) with `fault` injected, or None when the reply carries no
    tool call or cannot carry this fault. `tools`: the request's tool list (for the faults
    that need a schema)."""
    if fault not in _APPLY:
        raise ValueError(f"unknown fault {fault!r}: one of {', '.join(FAULTS)}")
    reply = _Reply(body.split(b"\n\n"))
    if not reply.calls or not _APPLY[fault](reply, _schemas(tools)):
        return None
    return reply.write()


def frontend_reply(calls: list[tuple[str, dict[str, Any]]], text: str = "",
                   finish: str = "length", reply_id: str = "r") -> bytes:
    """A reply shaped as the Dynamo 1.6.1 frontend streams one parsed from scripted mocker
    output: the calls whole in the first chunk (ids `call-<reply>-<i>`), the finish reason
    alone in the next (the mocker's 'length', whatever it parsed), usage, then `[DONE]`."""
    delta: dict[str, Any] = {"content": text, "role": "assistant"}
    if calls:
        delta["tool_calls"] = [{"index": i, "id": f"call-{reply_id}-{i}", "type": "function",
                                "function": {"name": name, "arguments": json.dumps(args)}}
                               for i, (name, args) in enumerate(calls)]
    chunks = [{"id": reply_id, "object": "chat.completion.chunk",
               "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
              {"id": reply_id, "object": "chat.completion.chunk",
               "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
              {"id": reply_id, "object": "chat.completion.chunk", "choices": [],
               "usage": {"prompt_tokens": 100, "completion_tokens": 30, "total_tokens": 130}}]
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + \
        b"data: [DONE]\n\n"


def classes_shown(fault: str, finish: str | None) -> set[str]:
    """The classes a reply broken by `fault` falls in when its stream ends with `finish`: its
    own, and on a reply ending 'length' (the Dynamo mocker ends every one so) a lost brace or a
    cut call is both arguments that are not JSON and a call cut by the length limit."""
    shown = {fault}
    if fault in ("arguments_not_json", "cut_by_length") and (
            finish == "length" or fault == "cut_by_length"):
        shown |= {"arguments_not_json", "cut_by_length"}
    return shown
