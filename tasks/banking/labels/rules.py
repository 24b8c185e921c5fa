"""The rules `sentence@3` applies besides its encoder, each read from the dataset's own tools.

- **Money moved between two things of one kind** (two accounts at this bank, two pots): the
  dataset's tool for it is the one whose parameters name a source and a destination of the same
  kind (`from_account`/`to_account`, `source_account_id`/`destination_account_id`,
  `from_pot`/`to_pot`; neither a date nor a choice from a list) beside a number to move. A
  goal that moves an amount (a verb of moving or paying, an amount) into or out of such a thing
  gets that tool — unless it also names what only another money tool's schema speaks of (a
  loan's principal, a foreign currency the wire tool lists, a bill), because the encoder then
  weighs the account words above the movement and the other tool's words both. Without such a
  tool the rule does nothing.
- **An explanation** ("why…", "how does … work", "explain") gets no tool unless some tool's
  description says it explains or gives reasons.

No list of the kinds of request "no tool performs" is kept: whether a tool serves a goal is
decided against the dataset's tools by the encoder (`sentence.py`), never by what the tools of
one dataset happened to lack.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tasks.banking.labels import intent
from tasks.banking.labels.text import GENERAL_FORMS, stem, tokens
from tasks.banking.rows import ToolRow

# General English: verbs of moving or paying money, an amount, and the words for an account a
# customer uses whatever the bank calls it.
MOVE_VERBS = ("move", "moving", "shift", "shoot", "transfer", "send", "put", "pay", "give", "roll",
              "sweep", "top up", "chuck", "bring", "stash", "deposit")
MOVE = re.compile(r"\b(" + "|".join(MOVE_VERBS) + r")\b")
AMOUNT = re.compile(r"[$€£]\s?\d|\b\d[\d,.]*\s?(k|bucks|dollars?|quid|grand)?\b")
ACCOUNT_WORDS = frozenset({"account", "acct", "savings", "checking"})
SOURCE = re.compile(r"^(from|source|origin)_(.+)$")
DESTINATION = re.compile(r"^(to|destination|target)_(.+)$")
EXPLAINS = re.compile(r"\b(explain|explanation|why|reasons? for)\b", re.IGNORECASE)
WHY = re.compile(r"^\s*why\b", re.IGNORECASE)  # a "why" question asks for a reason


def _text(goal: str) -> str:
    return goal.lower().replace("\u2019", "'")


def _kind(name: str) -> str:
    """`source_account_id` → `account`: what a source or destination parameter names."""
    return re.sub(r"_(id|number|no)$", "", name)


def _is_a_thing(schema: dict) -> bool:
    """A parameter naming an account or pot: not a date, not a choice from a list."""
    return (isinstance(schema, dict) and schema.get("type") == "string" and "enum" not in schema
            and schema.get("format") not in ("date", "date-time"))


def _moves_an_amount(properties: dict) -> bool:
    return any(isinstance(s, dict) and s.get("type") in ("number", "integer")
               and ("amount" in name or "deposit" in name) for name, s in properties.items())


def schema_words(tool: ToolRow) -> set[str]:
    """Content words of a tool's name, description, parameter names and enum values."""
    parts = [tool.title.replace("_", " "), tool.description]
    for name, schema in tool.parameters.items():
        parts.append(name.replace("_", " "))
        if isinstance(schema, dict):
            parts += [str(v).replace("_", " ") for v in schema.get("enum", [])]
    return set(tokens(" ".join(parts), GENERAL_FORMS))


@dataclass(frozen=True)
class Mover:
    """The dataset's tool that moves an amount between two things of one kind."""

    tool: str
    kinds: frozenset[str]  # words naming those things ("account", "pot") and an account's
    elsewhere: frozenset[str]  # words only the other money tools' schemas have

    def serves(self, goal: str) -> bool:
        text = _text(goal)
        if not (MOVE.search(text) and AMOUNT.search(text)):
            return False
        where = re.search(r"\b(into|to|over to|across to|from|out of)\b[^.?!]*\b("
                          + "|".join(sorted(self.kinds)) + r")s?\b", text)
        if where is None:
            return False
        outside = text[:where.start()] + " " + text[where.end():]
        return not set(tokens(outside, GENERAL_FORMS)) & self.elsewhere


def mover(tools: list[ToolRow]) -> Mover | None:
    """The tool of `tools` that moves money between two things of one kind, if exactly one
    does (two such tools: the rule cannot tell them apart, and leaves it to the encoder)."""
    found = []
    for tool in tools:
        props = tool.parameters
        sources = {_kind(m.group(2)) for p, s in props.items() if (m := SOURCE.match(p))
                   and _is_a_thing(s)}
        targets = {_kind(m.group(2)) for p, s in props.items() if (m := DESTINATION.match(p))
                   and _is_a_thing(s)}
        if sources & targets and _moves_an_amount(props):
            found.append((tool, sources & targets))
    if len(found) != 1:
        return None
    tool, kinds = found[0]
    words = {w for k in kinds for w in k.split("_")} | ACCOUNT_WORDS
    own = schema_words(tool) | {stem(w) for w in words} | words
    moving = {stem(w) for verb in MOVE_VERBS for w in verb.split()}
    others: set[str] = set()
    for other in tools:
        if other.title != tool.title and _moves_an_amount(other.parameters):
            others |= schema_words(other)
    return Mover(tool=tool.title, kinds=frozenset(words),
                 elsewhere=frozenset(others - own - moving))


def explained_by_a_tool(tools: list[ToolRow]) -> bool:
    return any(EXPLAINS.search(tool.description) for tool in tools)


def explanation(goal: str, tools_explain: bool) -> str | None:
    """Why an explanation request gets no tool, unless a tool of the dataset explains."""
    if tools_explain:
        return None
    if WHY.search(goal):
        return "asks for a reason, which no tool of this dataset gives"
    return intent.explanation(goal)
