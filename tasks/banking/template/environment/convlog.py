"""The conversation log /logs/agent/conversation.jsonl: one JSON line per message of a
conversation-mode task (the customer's and the agent's), written by the bank only.

A `bank say` holds an exclusive lock on the log while it reads this attempt's conversation,
gets the customer's answer and appends the new lines, so every say of an attempt sees the one
before it and `seq` numbers are unique and gap-free. The log is the conversation's only state
(the in-process bank runs every command in a fresh process). Standard library only; runs on
Python 3.8+.
"""

from __future__ import annotations

import json
import os
import time

from convread import parse_log
from intentlog import MAX_LOG_LINES, LogFull, intents_path, to_utf8

TYPE_CHECKING = False  # typing is imported by type checkers only (start-up cost)
if TYPE_CHECKING:
    from typing import Any, BinaryIO

CONVERSATION_FILE = "conversation.jsonl"
FIELDS = ("seq", "attempt", "turn", "speaker", "text", "ended", "end_reason", "goal_index",
          "kind", "customer_kind", "customer", "ts")


def conversation_path() -> str:
    """$BANK_CONVERSATION, else conversation.jsonl beside the intents log (both default to
    /logs/agent)."""
    return (os.environ.get("BANK_CONVERSATION")
            or os.path.join(os.path.dirname(intents_path()), CONVERSATION_FILE))


def parse_lines(content: bytes) -> list[dict[str, Any]]:
    """The log's readable lines (convread's rule: a torn or foreign line is skipped)."""
    return parse_log(content)[0]


def read_entries(path: str | None = None) -> list[dict[str, Any]]:
    """Every readable line; none when the log does not exist (not a conversation task)."""
    try:
        with open(path or conversation_path(), "rb") as handle:
            return parse_lines(handle.read())
    except FileNotFoundError:
        return []


def attempt_history(entries: list[dict[str, Any]], attempt: int) -> list[dict[str, Any]]:
    return [e for e in entries if e.get("attempt") == attempt]


def agent_says(history: list[dict[str, Any]]) -> int:
    """How many times the agent spoke in this history: the customer turn it works on."""
    return sum(1 for e in history if e.get("speaker") == "agent")


def current_turn(attempt: int, path: str | None = None) -> int:
    """The customer turn an attempt is on: 0 before its first say, n after its n-th."""
    return agent_says(attempt_history(read_entries(path), attempt))


class Locked:
    """`with Locked(path) as log:` the log opened and exclusively locked; `log.entries` are
    its lines, `log.append(lines)` adds lines (numbered here) in one write."""

    def __init__(self, path: str | None = None) -> None:
        self.path = path or conversation_path()
        self.handle: BinaryIO | None = None
        self.entries: list[dict[str, Any]] = []
        self._content = b""

    def __enter__(self) -> Locked:
        import fcntl

        directory = os.path.dirname(self.path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        self.handle = open(self.path, "a+b")
        fcntl.flock(self.handle.fileno(), fcntl.LOCK_EX)
        self.handle.seek(0)
        self._content = self.handle.read()
        self.entries = parse_lines(self._content)
        return self

    def append(self, lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        assert self.handle is not None
        if self._content.count(b"\n") + len(lines) > MAX_LOG_LINES:
            raise LogFull(f"the conversation log holds its most lines ({MAX_LOG_LINES}): "
                          "not recorded")
        seq = max((e["seq"] for e in self.entries if isinstance(e.get("seq"), int)), default=0)
        written, data = [], b""
        for line in lines:
            seq += 1
            record = dict(line, seq=seq, ts=time.time())
            record = {k: record[k] for k in FIELDS if k in record}
            written.append(record)
            data += to_utf8(json.dumps(record, ensure_ascii=False) + "\n")
        if self._content and not self._content.endswith(b"\n"):
            data = b"\n" + data  # a torn line from a killed writer stays on its own line
        self.handle.seek(0, os.SEEK_END)
        self.handle.write(data)
        self.handle.flush()
        self.entries += written
        return written

    def __exit__(self, *exc: object) -> None:
        import fcntl

        assert self.handle is not None
        try:
            fcntl.flock(self.handle.fileno(), fcntl.LOCK_UN)
        finally:
            self.handle.close()
