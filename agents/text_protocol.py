"""`tool_mode=text`: the Thought / Action / Action Input / Observation protocol.

For servers or models without native tool calling. The prompt describes the tools and the
format; the model's reply is cut at "Observation:" by stop sequences, and `parse_reply` reads
it tolerantly: markdown emphasis, any case, fenced or trailing-prose JSON, a `tool(...)` call
style, hermes `<tool_call>` blocks, a missing Action Input. Pure functions only.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from agents.jsontext import balanced_end, first_json_object, loads_lenient

STOP_SEQUENCES = ["\nObservation:", "Observation:"]

_LABEL = r"(?<![A-Za-z]){name}[*_`\s]*:[*_`]*"
_ACTION = re.compile(_LABEL.format(name="action") + r"[ \t]*(?P<rest>.*)", re.I)
_INPUT = re.compile(_LABEL.format(name=r"action[ _]?input"), re.I)
_FINAL = re.compile(_LABEL.format(name=r"final[ _]?answer"), re.I)
_THOUGHT = re.compile(_LABEL.format(name="thought"), re.I)
_HERMES = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S)
_NAME = re.compile(r"[A-Za-z_][\w.\-]*")


@dataclass
class TextReply:
    """One parsed reply: an action, a final answer, or an error to show the model."""

    thought: str = ""
    action: str | None = None
    action_input: str | None = None  # JSON text (normalised when it parsed, else raw)
    final_answer: str | None = None
    error: str | None = None


# (when to give a Final Answer, its Thought line, what the Final Answer holds)
DONE_RULE = ("When every request of the customer has been handled, reply with:",
             "I am done", "a short summary for the customer")
# Conversation mode: the final answer is whatever goes to the customer this turn.
SPEAK_RULE = ("To speak to the customer (to answer, to ask for a missing detail, or to say "
              "that a request cannot be served), reply with:", "I reply to the customer",
              "your message to the customer")


def system_prompt(tools: list[dict], intro: str,
                  final_rule: tuple[str, str, str] = DONE_RULE) -> str:
    lines = [intro, "", "You can use these tools:", ""]
    for tool in tools:
        fn = tool.get("function", tool)
        params = json.dumps(fn.get("parameters", {}), separators=(",", ":"))
        lines.append(f"- {fn.get('name')}: {fn.get('description', '').strip()}")
        lines.append(f"  parameters (JSON schema): {params}")
    lines += [
        "",
        "Answer in exactly this format, one action at a time:",
        "Thought: what to do next",
        "Action: one tool name from the list",
        'Action Input: the arguments as one JSON object, e.g. {"account_number": "123"}',
        "",
        "You will then receive `Observation: <the tool's result>`. Repeat as needed. "
        + final_rule[0],
        f"Thought: {final_rule[1]}",
        f"Final Answer: {final_rule[2]}",
    ]
    return "\n".join(lines)


def observation_message(text: str) -> str:
    return f"Observation: {text}"


def parse_reply(text: str) -> TextReply:
    """Read one model reply. Never raises; an unusable reply comes back with `error` set."""
    thought = _section_after(_THOUGHT, text) or ""
    action_match = _ACTION.search(text)
    final_match = _FINAL.search(text)
    # Whichever the model wrote first wins: a final answer after an action was never reached.
    if final_match and (not action_match or final_match.start() < action_match.start()):
        answer = text[final_match.end():].strip()
        return TextReply(thought=thought, final_answer=answer)
    if action_match:
        return _parse_action(text, action_match, thought)
    hermes = _HERMES.search(text)
    if hermes:
        call = first_json_object(hermes.group(1))
        if call and isinstance(call.get("name"), str):
            args = call.get("arguments", call.get("parameters", {}))
            if isinstance(args, str):
                return TextReply(thought, call["name"], args)
            return TextReply(thought, call["name"], json.dumps(args))
        return TextReply(thought, error="the <tool_call> block is not a JSON object with a name")
    return TextReply(
        thought,
        error="Invalid format: write `Action: <tool name>` and `Action Input: <JSON object>`, "
        "or `Final Answer: <summary>` when done.",
    )


def _parse_action(text: str, match: re.Match, thought: str) -> TextReply:
    rest = match.group("rest").strip()
    name_match = _NAME.search(rest.strip("`'\"*"))
    if not name_match:
        return TextReply(thought, error="`Action:` names no tool.")
    name = name_match.group(0)
    after_name = rest.strip("`'\"*")[name_match.end():].lstrip()
    input_match = _INPUT.search(text, match.end())
    if input_match:
        raw = _cut_input(text[input_match.end():])
    elif after_name.startswith("("):
        # `Action: get_balance({"account_number": "1"})` — call style on one line.
        inner = after_name[1:]
        raw = inner[: inner.rfind(")")] if ")" in inner else inner
    else:
        raw = "{}"  # a tool that needs no arguments, or the model forgot them
    return TextReply(thought, name, _normalise_json(raw.strip()))


def _cut_input(tail: str) -> str:
    """The Action Input text: a JSON object if one starts it, else up to the next label."""
    stripped = tail.strip()
    fenced = re.match(r"```(?:json)?\s*(.*?)```", stripped, re.S)
    if fenced:
        return fenced.group(1)
    start = stripped.find("{")
    if start != -1 and not stripped[:start].strip():
        end = balanced_end(stripped, start)
        return stripped[start:end] if end else stripped[start:]
    nxt = re.search(r"\n\s*[*_`#]*(thought|action|observation|final)", stripped, re.I)
    return stripped[: nxt.start()] if nxt else stripped


def _normalise_json(raw: str) -> str:
    """Valid JSON stays as the model wrote it; Python-style dicts become JSON; else raw."""
    try:
        json.loads(raw)
        return raw
    except (json.JSONDecodeError, ValueError):
        pass
    value = loads_lenient(raw)
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return raw  # passed on as is: the bank records invalid JSON and says so


def _section_after(label: re.Pattern, text: str) -> str | None:
    m = label.search(text)
    if not m:
        return None
    tail = text[m.end():]
    nxt = re.search(r"\n\s*[*_`#]*(action|final)", tail, re.I)
    return (tail[: nxt.start()] if nxt else tail).strip()
