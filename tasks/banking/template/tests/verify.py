#!/usr/bin/env python3
"""Score one trial's tool selection from the calls the mock bank recorded.

Reads the expected calls (tests/expected.json), the tool schemas (tools.json beside this
script, else /app/tools.json) and the intents log the bank wrote (/logs/agent/intents.jsonl),
picks the attempt to score (the last `accept` line, else the highest attempt seen), and writes:

- <out-dir>/reward.json: flat numbers only (tsq, precision, recall, param_validity,
  multiset_f1, goal_coverage, solved, goals_served, goals_declined, goal_score, the counts
  n_goals_servable, n_goals_no_tool, and turns), one Harbor metric each;
- <out-dir>/tsq.json: how those numbers came about (names actual vs expected, per-goal
  matches, every attempt's calls and scores, which attempt was scored and why, any reason
  for a zero, and in conversation mode the scored attempt's conversation).

Conversation-mode tasks (tests/conversation.json present) also read the conversation log the
bank wrote (/logs/agent/conversation.jsonl): `turns` is how many times the scored attempt
spoke to the customer (`bank say`); single-turn tasks have one exchange, turns 1.0. Goals are
scored over all the scored attempt's calls, whatever turn they were made in.

The metrics themselves are scoring.py's (pure functions of the calls and expected.json).
Every call's arguments are checked against its tool's schema again here (toolschema.py, the
same validator the bank uses): the log's `valid` flag is not trusted. It never crashes:
unreadable inputs score 0.0 with the reason in tsq.json. Standard library only; runs on
Python 3.8+.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
# toolschema.py is shipped beside this file; in the template it lives in ../environment.
sys.path[:0] = [HERE, os.path.join(os.path.dirname(HERE), "environment")]
import transcript  # noqa: E402

# The metrics live in scoring.py (shipped beside this file); re-exported for readers of verify.
from scoring import (  # noqa: E402,F401
    REWARD_KEYS,
    SINGLE_TURN,
    f1_from_counts,
    goal_coverage,
    goal_kind,
    goal_matches,
    goal_rewards,
    multiset_f1,
    normalise_tool_name,
    outside_calls,
    param_validity,
    score_calls,
    solved_by_names,
    tool_selection_quality,
)
from toolschema import check_call, tool_index  # noqa: E402

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

VERIFIER_VERSION = "2"  # 2: goal_score counts calls that serve no goal against it
DEFAULT_INTENTS = "/logs/agent/intents.jsonl"
CONVERSATION_FILE = "conversation.jsonl"  # beside the intents log
DEFAULT_OUT_DIR = "/logs/verifier"
DEFAULT_TOOLS = ("tools.json beside verify.py", "/app/tools.json")
MAX_CORRUPT_EXAMPLES = 10
# The bank records at most this many lines in each of its logs (environment/intentlog.py,
# convlog.py): a log holding more was not the bank's alone, and is scored 0 unread, so that no
# log can run the verifier out of time.
MAX_LOG_LINES = 5000
MAX_LOG_BYTES = MAX_LOG_LINES * (16 * 1024 + 4096)  # the bank's bound on one line, and room


class InputError(Exception):
    """An input file the score depends on is missing or malformed."""


# ---------------------------------------------------------------- reading inputs


def load_expected(path: str) -> dict[str, Any]:
    """expected.json, checked enough that scoring cannot trip over it."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except OSError as exc:
        raise InputError(f"expected file {path} unreadable: {exc}") from exc
    except ValueError as exc:
        raise InputError(f"expected file {path} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise InputError(f"expected file {path}: top level must be an object")
    tools = data.get("expected_tools")
    if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
        raise InputError(f"expected file {path}: expected_tools must be a list of tool names")
    goals = data.get("goals", [])
    if goals is None:
        goals = []
    if not isinstance(goals, list):
        raise InputError(f"expected file {path}: goals must be a list")
    for position, goal in enumerate(goals):
        goal_tools = goal.get("tools") if isinstance(goal, dict) else "not an object"
        if goal_tools is not None and not (
            isinstance(goal_tools, list) and all(isinstance(t, str) for t in goal_tools)
        ):
            raise InputError(
                f"expected file {path}: goals[{position}].tools must be null or a list of names"
            )
        if goal.get("no_tool", False) not in (True, False) or (goal.get("no_tool") and goal_tools):
            raise InputError(
                f"expected file {path}: goals[{position}].no_tool must be a boolean, and true "
                "only with no tools listed"
            )
    return dict(data, expected_tools=tools, goals=goals)


def read_intents(path: str) -> dict[str, Any]:
    """Calls and acceptances from the intents log; unreadable lines are skipped and counted."""
    log: dict[str, Any] = {"path": path, "exists": False, "lines": 0, "calls": [],
                           "accepts": [], "corrupt_lines": 0, "corrupt_examples": []}
    content = transcript.read_bytes(path, log, MAX_LOG_BYTES + 1) or b""
    if len(content) > MAX_LOG_BYTES or content.count(b"\n") > MAX_LOG_LINES:
        log["over_bound"] = True
        return log
    for number, raw in enumerate(content.splitlines(), start=1):
        if not raw.strip():
            continue
        log["lines"] += 1
        entry = parse_intent_line(raw)
        if entry is None:
            log["corrupt_lines"] += 1
            if len(log["corrupt_examples"]) < MAX_CORRUPT_EXAMPLES:
                log["corrupt_examples"].append(
                    {"line": number, "text": raw[:200].decode("utf-8", "replace")})
        elif "accept" in entry:
            log["accepts"].append(entry)
        else:
            log["calls"].append(entry)
    return log


def parse_intent_line(raw: bytes) -> dict[str, Any] | None:
    """A call {seq, attempt, tool, arguments, bank_valid, truncated} or an acceptance {accept},
    else None. Only `tool` must be a string; a missing `attempt` means 1. Whether the call is
    valid is decided by recheck(), not by the line.
    """
    try:
        entry = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(entry, dict):
        return None
    if "accept" in entry:
        accepted = entry["accept"]
        if isinstance(accepted, int) and not isinstance(accepted, bool) and accepted >= 1:
            return {"accept": accepted}
        return None
    tool, attempt = entry.get("tool"), entry.get("attempt", 1)
    if not isinstance(tool, str) or isinstance(attempt, bool) or not isinstance(attempt, int):
        return None
    turn = entry.get("turn", 0)
    return {
        "seq": entry.get("seq"),
        "attempt": attempt,
        "turn": turn if isinstance(turn, int) and not isinstance(turn, bool) else 0,
        "tool": tool,
        "arguments": entry.get("arguments"),
        "bank_valid": entry.get("valid") is True,
        "truncated": entry.get("arguments_truncated") is True,
    }


def load_tools(path: str | None) -> dict[str, dict[str, Any]]:
    """Tool name -> parameters schema, from `path` or the first of DEFAULT_TOOLS that exists."""
    candidates = [path] if path else [os.path.join(HERE, "tools.json"), "/app/tools.json"]
    for candidate in candidates:
        if path or os.path.exists(candidate):
            try:
                with open(candidate, encoding="utf-8") as handle:
                    tools = json.load(handle)
            except (OSError, ValueError) as exc:
                raise InputError(f"tool schemas {candidate} unreadable: {exc}") from exc
            if not isinstance(tools, list):
                raise InputError(f"tool schemas {candidate}: top level must be a list")
            return tool_index(tools)
    raise InputError(f"no tool schemas found (looked for {' and '.join(candidates)})")


def recheck(calls: list[dict[str, Any]], index: dict[str, dict[str, Any]] | None) -> int:
    """Set each call's `valid` and `errors` from the schema, not from the log; returns how
    many calls the log's own `valid` flag disagreed with. Without schemas (`index` None) no
    call is valid."""
    disagreements = 0
    for call in calls:
        if index is None:
            headline, details = "no tool schemas to check the arguments against", []
        elif call["truncated"]:
            # The log keeps only the head of oversized arguments: nothing left to check.
            headline, details = "arguments too large to check", []
        else:
            headline, details = check_call(call["tool"], True, call["arguments"], "", index)
        call["valid"] = not headline
        call["errors"] = [headline] + details if headline else []
        disagreements += call["valid"] != call["bank_valid"]
    return disagreements


def choose_attempt(log: dict[str, Any]) -> tuple[int, str]:
    """The accepted attempt (the last accept line), else the highest attempt with calls."""
    if log["accepts"]:
        accepted = log["accepts"][-1]["accept"]
        why = f"accepted: the last accept line names attempt {accepted}"
        if len(log["accepts"]) > 1:
            why += f" ({len(log['accepts'])} accept lines)"
        return accepted, why
    attempts = sorted({call["attempt"] for call in log["calls"]})
    if attempts:
        return attempts[-1], f"no accept line: highest attempt seen ({attempts[-1]})"
    return 1, "no accept line and no calls"


# ---------------------------------------------------------------- the report


def zero_reward() -> dict[str, float]:
    return {key: 0.0 for key in REWARD_KEYS}


def no_calls_reason(log: dict[str, Any]) -> str | None:
    if "read_error" in log:
        return f"intents file {log['path']} unreadable: {log['read_error']}"
    if not log["exists"]:
        return f"intents file {log['path']} missing: the agent made no bank call"
    if not log["lines"]:
        return f"intents file {log['path']} empty: the agent made no bank call"
    if not log["calls"] and log["corrupt_lines"]:
        return (f"intents file {log['path']}: no readable call "
                f"({log['corrupt_lines']} corrupt lines)")
    return None


def build_report(expected_path: str, intents_path: str, tools_path: str | None = None,
                 conversation_path: str | None = None, spec_path: str | None = None
                 ) -> dict[str, Any]:
    """Everything tsq.json holds; its `reward` is what reward.json gets.

    `spec_path` (tests/conversation.json) present makes the task a conversation, whose log
    is `conversation_path` (default: beside the intents log)."""
    log = read_intents(intents_path)
    spec = transcript.load_spec(spec_path or os.path.join(HERE, "conversation.json"))
    talk = None if spec is None else transcript.read_log(
        conversation_path or os.path.join(os.path.dirname(intents_path), CONVERSATION_FILE),
        MAX_LOG_BYTES, MAX_LOG_LINES)

    def turns_of(attempt: int) -> float:
        return SINGLE_TURN if talk is None else float(transcript.turns(talk, attempt))

    report: dict[str, Any] = {
        "verifier_version": VERIFIER_VERSION,
        "expected_path": expected_path,
        "intents": {k: v for k, v in log.items() if k not in ("calls", "accepts")},
        "reward": zero_reward(),
        "reason": None,
    }
    report["intents"]["n_calls"] = len(log["calls"])
    report["intents"]["n_accepts"] = len(log["accepts"])
    try:
        index: dict[str, dict[str, Any]] | None = load_tools(tools_path)
    except InputError as exc:
        # Selection is still scored; no argument can be called valid without its schema.
        index, report["tools_error"] = None, str(exc)
    for over in (log, talk or {}):
        if over.get("over_bound"):
            report["reason"] = (f"{over['path']} holds more than {MAX_LOG_LINES} lines or "
                                f"{MAX_LOG_BYTES} bytes, more than the bank records: scored 0")
            return report
    report["intents"]["valid_flag_disagreements"] = recheck(log["calls"], index)
    try:
        expected = load_expected(expected_path)
    except InputError as exc:
        report["reason"] = str(exc)
        return report
    report["scenario_id"] = expected.get("scenario_id")
    attempt, why = choose_attempt(log)
    by_attempt: dict[int, list[dict[str, Any]]] = {}
    for call in log["calls"]:
        by_attempt.setdefault(call["attempt"], []).append(call)
    report["attempts"] = [
        {"attempt": n, "calls": calls,
         "reward": score_calls(calls, expected, turns_of(n))["reward"]}
        for n, calls in sorted(by_attempt.items())
    ]
    scored_calls = by_attempt.get(attempt, [])
    if log["calls"] and not scored_calls:
        why += f"; attempt {attempt} has no recorded calls"
    scored = score_calls(scored_calls, expected, turns_of(attempt))
    if spec is not None and talk is not None:
        report["conversation"] = transcript.summary(spec, talk, attempt)
    actual_names = [call["tool"] for call in scored_calls]
    actual_norm = sorted({normalise_tool_name(n) for n in actual_names})
    expected_norm = sorted({normalise_tool_name(n) for n in expected["expected_tools"]})
    report.update({
        "scored_attempt": attempt,
        "attempt_selection": why,
        "reward": scored["reward"],
        "actual_tools": actual_names,
        "actual_normalised": actual_norm,
        "expected_tools": expected["expected_tools"],
        "expected_normalised": expected_norm,
        "matched": sorted(set(actual_norm) & set(expected_norm)),
        "missing": sorted(set(expected_norm) - set(actual_norm)),
        "extra": sorted(set(actual_norm) - set(expected_norm)),
        "goals": scored["goals"],
        "outside": outside_calls(expected["goals"], scored_calls),
    })
    if not scored_calls:
        report["reason"] = no_calls_reason(log) or f"attempt {attempt} made no bank call"
    return report


def write_json(path: str, payload: Any) -> None:
    """Write via a temporary file and rename, so readers never see half a file."""
    # Lone surrogates (undecodable bytes an agent passed on the command line) stay escapes.
    data = (json.dumps(payload, indent=2, ensure_ascii=False) + "\n").encode(
        "utf-8", "backslashreplace")
    fd, temporary = tempfile.mkstemp(dir=os.path.dirname(path) or ".", suffix=".json")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Score tool selection for one trial.")
    parser.add_argument("--expected", default=os.path.join(HERE, "expected.json"),
                        help="expected calls (default: expected.json beside this script)")
    parser.add_argument("--intents", default=os.environ.get("BANK_INTENTS") or DEFAULT_INTENTS,
                        help="the bank's intents log (default: $BANK_INTENTS or %(default)s)")
    parser.add_argument("--conversation", default=None,
                        help="conversation-mode tasks: the bank's conversation log (default: "
                        "$BANK_CONVERSATION, else conversation.jsonl beside --intents)")
    parser.add_argument("--conversation-spec", default=os.path.join(HERE, "conversation.json"),
                        help="the task's conversation spec; present only in conversation mode "
                        "(default: conversation.json beside this script)")
    parser.add_argument("--tools", default=None,
                        help="tool schemas the calls are checked against "
                             f"(default: {' else '.join(DEFAULT_TOOLS)})")
    parser.add_argument("--out-dir", default=DEFAULT_OUT_DIR,
                        help="where reward.json and tsq.json go (default: %(default)s)")
    return parser.parse_args(argv)


def error_report(what: str) -> dict[str, Any]:
    import traceback  # only on errors: a verification without one skips loading it

    return {
        "verifier_version": VERIFIER_VERSION,
        "reward": zero_reward(),
        "reason": f"verifier error {what}: " + traceback.format_exc(limit=5),
    }


def main(argv: list[str]) -> int:
    """Exit 0 once reward.json is written (whatever the score); non-zero only if it is not."""
    args = parse_args(argv)
    os.makedirs(args.out_dir, exist_ok=True)
    try:
        report = build_report(args.expected, args.intents, args.tools,
                              args.conversation or os.environ.get("BANK_CONVERSATION"),
                              args.conversation_spec)
    except Exception:  # the reward file must exist whatever went wrong
        report = error_report("while scoring")
    write_json(os.path.join(args.out_dir, "reward.json"), report["reward"])
    try:
        write_json(os.path.join(args.out_dir, "tsq.json"), report)
    except Exception:
        write_json(os.path.join(args.out_dir, "tsq.json"), error_report("writing tsq.json"))
    summary = " ".join(f"{k}={report['reward'][k]:.3f}" for k in REWARD_KEYS)
    reason = f"  ({report['reason']})" if report["reason"] else ""
    try:
        sys.stdout.buffer.write((summary + reason + "\n").encode("utf-8", "backslashreplace"))
        sys.stdout.flush()
    except (AttributeError, OSError, ValueError):
        pass  # a closed or odd stdout must not fail a verification whose files are written
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
