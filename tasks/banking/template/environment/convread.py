"""Which lines of the conversation log (/logs/agent/conversation.jsonl) are readable: one rule
for the bank (convlog.py), the verifier (tests/transcript.py) and the host.

A readable line is a JSON object holding what the bank writes for every line — `seq`,
`attempt` (both 1 or more), `turn` (0 or more), `speaker` (customer or agent), `text` and `ts`
— with `ended` a boolean, `end_reason` one of END_REASONS and `goal_index` an integer when
present. Anything else (a torn line from a killed writer, a foreign line) is skipped and
counted, never fatal. The host reads the log through `contracts.conversation.ConversationEntry`;
tests/contracts/test_template_mirrors.py pins the two rules equal. This file is shipped twice
(environment/ and tests/), one source in the template. Standard library only; runs on
Python 3.8+.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False  # typing is imported by type checkers only (start-up cost)
if TYPE_CHECKING:
    from typing import Any

SPEAKERS = ("customer", "agent")
END_REASONS = ("satisfied", "turn_limit")


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_entry(entry: Any) -> bool:
    """The line holds every field a reader relies on, each of its type."""
    if not isinstance(entry, dict):
        return False
    seq, attempt, turn, ts = (entry.get(k) for k in ("seq", "attempt", "turn", "ts"))
    goal = entry.get("goal_index")
    return (_integer(seq) and seq >= 1 and _integer(attempt) and attempt >= 1
            and _integer(turn) and turn >= 0 and entry.get("speaker") in SPEAKERS
            and isinstance(entry.get("text"), str)
            and (_integer(ts) or isinstance(ts, float))
            and isinstance(entry.get("ended", False), bool)
            and entry.get("end_reason") in (None, *END_REASONS)
            and (goal is None or _integer(goal)))


def parse_log(content: bytes) -> tuple[list[dict[str, Any]], int]:
    """(the readable lines in file order, how many non-blank lines were not)."""
    entries, corrupt = [], 0
    for raw in content.splitlines():
        if not raw.strip():
            continue
        try:
            entry = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            entry = None
        if is_entry(entry):
            entries.append(entry)
        else:
            corrupt += 1
    return entries, corrupt
