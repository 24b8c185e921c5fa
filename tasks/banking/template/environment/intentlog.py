"""The intents log: one JSON line per bank call (and per `bank accept`), appended under a lock.

Only the bank writes it. Where the environment allows, the bank runs as a service the agent's
user cannot impersonate and the log is owned by that service (see bankd.py). Standard library
only; runs on Python 3.8+.
"""

from __future__ import annotations

import json
import os
import time

from toolschema import clip

TYPE_CHECKING = False  # typing is imported by type checkers only (start-up cost)
if TYPE_CHECKING:
    from typing import Any

DEFAULT_INTENTS = "/logs/agent/intents.jsonl"
# Bounds that keep one runaway call from bloating the log the verifier has to read.
MAX_ARGUMENTS_BYTES = 16 * 1024
MAX_TOOL_NAME_CHARS = 256
# Lines the log takes at most (calls and acceptances): beyond them nothing more is recorded,
# so the verifier's work on it is bounded (pinned equal to verify.py's and the host contract's).
MAX_LOG_LINES = 5000


class LogFull(Exception):
    """The log holds MAX_LOG_LINES lines: the line was not recorded."""


def intents_path() -> str:
    return os.environ.get("BANK_INTENTS") or DEFAULT_INTENTS


def to_utf8(text: str) -> bytes:
    """UTF-8, with undecodable command-line bytes (lone surrogates) kept as JSON escapes."""
    return text.encode("utf-8", "backslashreplace")


def append_record(record: dict[str, Any], with_seq: bool, path: str | None = None
                  ) -> dict[str, Any]:
    """Append one JSON line under an exclusive lock; `seq` is assigned while the lock is held."""
    import fcntl

    path = path or intents_path()
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    with open(path, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            handle.seek(0)
            content = handle.read()
            if content.count(b"\n") >= MAX_LOG_LINES:
                raise LogFull(f"the intents log holds its most lines ({MAX_LOG_LINES}): not "
                              "recorded (a trial's bank calls are bounded, so is scoring them)")
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
    first = ["seq", "attempt", "turn", "tool", "arguments", "valid", "errors", "ts"]
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

