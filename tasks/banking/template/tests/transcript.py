"""The verifier's reading of a conversation-mode trial: the task's conversation spec
(tests/conversation.json, written by the task builder in that mode only) and the conversation
log the bank service wrote (/logs/agent/conversation.jsonl).

What it yields for one attempt is the `conversation` object of tsq.json: how many times the
agent spoke (`turns`, also a reward.json number), how the conversation ended, and which goals
the customer brought up (scripted customer only: an llm customer's lines are not tied to
goals). Unreadable lines are skipped and counted, never fatal. Standard library only; runs on
Python 3.8+.
"""

from __future__ import annotations

import json

from convread import parse_log

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def load_spec(path: str) -> dict[str, Any] | None:
    """tests/conversation.json as {mode, max_turns}; None for a single-turn task (no file)."""
    try:
        with open(path, encoding="utf-8") as handle:
            spec = json.load(handle)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        # The file's presence says conversation mode; its content only adds max_turns.
        return {"mode": "conversation", "max_turns": None, "error": str(exc)}
    if not isinstance(spec, dict):
        return {"mode": "conversation", "max_turns": None, "error": "not a JSON object"}
    return spec


def read_bytes(path: str, log: dict[str, Any], limit: int = -1) -> bytes | None:
    """A log's bytes (at most `limit`, when given), noting in `log` whether it `exists` or why
    it could not be read (`read_error`); None when there is nothing to read."""
    try:
        with open(path, "rb") as handle:
            content = handle.read(limit)
    except FileNotFoundError:
        return None
    except OSError as exc:
        log["read_error"] = str(exc)
        return None
    log["exists"] = True
    return content


def read_log(path: str, max_bytes: int = -1, max_lines: int | None = None) -> dict[str, Any]:
    """The log's readable lines and what went wrong reading it; past `max_bytes` or
    `max_lines` (more than the bank writes) it is not parsed and `over_bound` says so."""
    log: dict[str, Any] = {"path": path, "exists": False}
    content = read_bytes(path, log, max_bytes + 1 if max_bytes >= 0 else -1) or b""
    if (max_bytes >= 0 and len(content) > max_bytes) or (
            max_lines is not None and content.count(b"\n") > max_lines):
        log["entries"], log["corrupt_lines"], log["over_bound"] = [], 0, True
        return log
    log["entries"], log["corrupt_lines"] = parse_log(content)
    return log


def summary(spec: dict[str, Any], log: dict[str, Any], attempt: int) -> dict[str, Any]:
    """tsq.json's `conversation` object for the scored attempt."""
    lines = [e for e in log["entries"] if e["attempt"] == attempt]
    answers = [e for e in lines if e["speaker"] == "customer" and _int(e.get("turn")) > 0]
    last = answers[-1] if answers else None
    kinds = sorted({str(e.get("customer_kind") or "scripted") for e in answers})
    who = sorted({e["customer"] for e in answers if isinstance(e.get("customer"), str)})
    scripted = kinds == ["scripted"]
    revealed = sorted({e["goal_index"] for e in answers if e.get("kind") == "goal"
                       and isinstance(e.get("goal_index"), int)})
    result = {
        "mode": spec.get("mode", "conversation"),
        "max_turns": spec.get("max_turns"),
        "log": {k: log[k] for k in ("path", "exists", "corrupt_lines", "read_error")
                if k in log},
        "attempt": attempt,
        "attempts": sorted({e["attempt"] for e in log["entries"]}),
        "turns": turns(log, attempt),
        "ended": bool(last and last.get("ended")),
        "end_reason": last.get("end_reason") if last else None,
        "customer_kind": kinds[0] if len(kinds) == 1 else (kinds or None),
        "customer": who[0] if len(who) == 1 else (who or None),
        "goals_revealed": revealed if scripted else None,
        "n_goals_revealed": len(revealed) if scripted else None,
        "n_lines": len(lines),
    }
    if "error" in spec:
        result["spec_error"] = spec["error"]
    return result


def turns(log: dict[str, Any], attempt: int) -> int:
    """How many times the attempt spoke to the customer."""
    return sum(1 for e in log["entries"] if e["attempt"] == attempt and e["speaker"] == "agent")


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
