"""What one finished trial says about its tool calls, read leniently into `TrialInputs`.

- Tool calls come from the **bank's** record (the intents log), never from what the agent
  wrote about itself, and only from the attempt the verifier scored.
- Expected tools and goals come from the task's `tests/expected.json` (found through the
  trial's `config.json`), else from the verifier's `tsq.json`, which repeats them.
- The customer's request is the task's `instruction.md`; the agent's words (its text beside
  each call, the bank's replies it saw, its final answer) come from `agent/trajectory.json`
  (Harbor's ATIF) when the agent wrote one.
- In conversation mode, every customer and agent line of the scored attempt comes from the
  bank's conversation log (`agent/conversation.jsonl`), in order (`dialogue`); each call
  carries the customer turn it was made on, so a reader can place it between the lines.

Missing or broken files add an `Issue` and leave the field empty; nothing here raises.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from analysis.files import Issue, read_json_dict
from contracts.conversation import CONVERSATION_FILE, ConversationEntry
from contracts.expected import EXPECTED_FILE
from contracts.intents import INTENTS_FILE
from contracts.tsq import TSQ_DETAILS_FILE

# Where a trial may keep the bank's log, most trusted first: a copy the agent cannot write
# (verifier/ or bank/, as Harbor downloads them) before the agent's own log folder.
INTENTS_LOCATIONS = (
    Path("verifier") / INTENTS_FILE,
    Path("bank") / INTENTS_FILE,
    Path("artifacts") / INTENTS_FILE,
    Path("agent") / INTENTS_FILE,
)
TRAJECTORY_FILE = "trajectory.json"


class BankCall(BaseModel):
    """One call the bank recorded for the scored attempt."""

    seq: int | None = None
    turn: int = Field(0, description="Customer turn the call was made on (0 before the "
                      "first `bank say`, and always in single-turn tasks).")
    tool: str
    arguments: Any = None
    valid: bool = False


class Turn(BaseModel):
    """One tool call as the agent's trajectory shows it, with what the agent saw back."""

    text: str = Field("", description="The agent's text in the step that made the call.")
    tool: str
    arguments: Any = None
    observation: str | None = None
    step_id: int


class TrialInputs(BaseModel):
    scenario_id: str
    instruction: str | None = None
    calls: list[BankCall] = Field(default_factory=list)
    scored_attempt: int | None = None
    expected_tools: list[str] = Field(default_factory=list)
    goals: list[str] = Field(default_factory=list)
    goal_tools: list[list[str]] | None = Field(
        None, description="Per goal a tool serves, in goal order: its alternative tools (any "
        "one serves, first preferred). None when the labels do not map tools to goals.")
    known_tools: list[str] = Field(default_factory=list, description="The task's tool names.")
    turns: list[Turn] = Field(default_factory=list)
    dialogue: list[ConversationEntry] = Field(
        default_factory=list, description="Conversation mode: the scored attempt's customer "
        "and agent lines in order (empty in single-turn modes).")
    final_answer: str | None = None
    agent_replies: int = Field(0, description="Agent (not evaluator) model replies in the "
                               "trajectory, every attempt.")
    unparsed_call_replies: int = Field(
        0, description="Of those, replies whose text still holds a `<tool_call>` tag: the "
        "server's tool parser did not turn it into a call (malformed).")


def intents_log(trial_dir: Path) -> Path | None:
    """The bank's intents log of a trial: the one place that knows where it lies."""
    for relative in INTENTS_LOCATIONS:
        if (trial_dir / relative).is_file():
            return trial_dir / relative
    return None


def read_bank_log(path: Path, issues: list[Issue]) -> tuple[list[dict[str, Any]], list[int]]:
    """Call lines and accepted attempt numbers; unreadable lines are counted as one issue."""
    calls: list[dict[str, Any]] = []
    accepts: list[int] = []
    bad = 0
    try:
        lines = path.read_bytes().splitlines()
    except OSError as exc:
        issues.append(Issue(str(path), f"unreadable ({exc})"))
        return calls, accepts
    for raw in lines:
        if not raw.strip():
            continue
        try:
            entry = json.loads(raw)
        except (ValueError, RecursionError):
            bad += 1
            continue
        if isinstance(entry, dict) and _is_count(entry.get("accept")):
            accepts.append(entry["accept"])
        elif isinstance(entry, dict) and isinstance(entry.get("tool"), str):
            calls.append(entry)
        else:
            bad += 1
    if bad:
        issues.append(Issue(str(path), f"{bad} unreadable line(s) skipped"))
    return calls, accepts


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _attempt_of(call: dict[str, Any]) -> int:
    attempt = call.get("attempt", 1)
    return attempt if _is_count(attempt) else 1


def scored_calls(calls: list[dict[str, Any]], accepts: list[int],
                 verifier_choice: int | None) -> tuple[int | None, list[BankCall]]:
    """The verifier's scored attempt (its own choice when tsq.json names one; else its rule:
    the last accept line, else the highest attempt with calls) and that attempt's calls."""
    attempt = verifier_choice
    if attempt is None:
        attempt = accepts[-1] if accepts else max((_attempt_of(c) for c in calls), default=None)
    chosen = [c for c in calls if _attempt_of(c) == attempt]
    chosen.sort(key=lambda c: c["seq"] if isinstance(c.get("seq"), int) else 0)
    return attempt, [BankCall(seq=c.get("seq") if isinstance(c.get("seq"), int) else None,
                              turn=c["turn"] if _is_count(c.get("turn")) else 0,
                              tool=c["tool"], arguments=c.get("arguments"),
                              valid=c.get("valid") is True) for c in chosen]


def read_dialogue(trial_dir: Path, attempt: int | None, issues: list[Issue]
                  ) -> list[ConversationEntry]:
    """The scored attempt's lines of the bank's conversation log, in `seq` order; none when
    the task was no conversation (no log). Unreadable lines are counted as one issue."""
    path = trial_dir / "agent" / CONVERSATION_FILE
    if not path.is_file():
        return []
    try:
        raw_lines = path.read_bytes().splitlines()
    except OSError as exc:
        issues.append(Issue(str(path), f"unreadable ({exc})"))
        return []
    lines, bad = [], 0
    for raw in raw_lines:
        if not raw.strip():
            continue
        try:
            lines.append(ConversationEntry.model_validate_json(raw))
        except ValueError:
            bad += 1
    if bad:
        issues.append(Issue(str(path), f"{bad} unreadable line(s) skipped"))
    return sorted((e for e in lines if attempt is None or e.attempt == attempt),
                  key=lambda e: e.seq)


def _calls_from_tsq(tsq: dict[str, Any], attempt: int | None) -> list[dict[str, Any]]:
    for item in tsq.get("attempts") or []:
        if isinstance(item, dict) and item.get("attempt") == attempt:
            return [dict(c, attempt=attempt) for c in item.get("calls") or []
                    if isinstance(c, dict) and isinstance(c.get("tool"), str)]
    return []


def task_dir(trial_dir: Path, issues: list[Issue]) -> Path | None:
    """The task folder named in the trial's config.json, else a sibling `tasks/<name>` of a
    sweep (the task folder may have moved since the run)."""
    task = read_json_dict(trial_dir / "config.json", issues).get("task")
    path = Path(task["path"]) if isinstance(task, dict) and task.get("path") else None
    candidates = [path] if path else []
    name = path.name if path else trial_dir.name.split("__")[0]
    candidates += [parent / "tasks" / name for parent in trial_dir.parents[:3]]
    return next((c for c in candidates if (c / "tests" / EXPECTED_FILE).is_file()), None)


def _expected(task: Path | None, tsq: dict[str, Any], trial_dir: Path, issues: list[Issue]
              ) -> tuple[list[str], list[str], list[list[str]] | None]:
    """(expected tools, goal texts, per served goal its alternatives or None)."""
    data: dict[str, Any] = {}
    if task is not None:
        data = read_json_dict(task / "tests" / EXPECTED_FILE, issues)
    if not isinstance(data.get("expected_tools"), list):
        data = tsq  # the verifier repeats expected_tools and goals
    tools = [t for t in data.get("expected_tools") or [] if isinstance(t, str)]
    raw_goals = [g for g in data.get("goals") or [] if isinstance(g, dict | str)]
    goals = [g.get("text") if isinstance(g, dict) else g for g in raw_goals]
    goals = [g for g in goals if isinstance(g, str)]
    alternatives: list[list[str]] | None = []
    for goal in raw_goals:
        listed = goal.get("tools") if isinstance(goal, dict) else None
        if not isinstance(listed, list):
            alternatives = None  # the labels do not map tools to goals
            break
        names = [t for t in listed if isinstance(t, str)]
        if names:  # a goal no tool serves expects no call
            alternatives.append(names)
    if alternatives is not None and [a[0] for a in alternatives] != tools:
        alternatives = None  # not the per-goal side of expected_tools: trust expected_tools
    if not tools and not goals:
        issues.append(Issue(str(trial_dir), "no expected tools found (no task expected.json, "
                                            "no verifier tsq.json)"))
    return tools, goals, alternatives


def _known_tools(task: Path | None, issues: list[Issue]) -> list[str]:
    if task is None or not (task / "environment" / "tools.json").is_file():
        return []
    try:
        data = json.loads((task / "environment" / "tools.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        issues.append(Issue(str(task / "environment" / "tools.json"), f"unreadable ({exc})"))
        return []
    names = []
    for item in data if isinstance(data, list) else []:
        function = item.get("function", item) if isinstance(item, dict) else {}
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            names.append(function["name"])
    return names


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8").strip() or None
    except (OSError, UnicodeDecodeError):
        return None


UNPARSED_CALL_TAG = "<tool_call>"


def conversation(trial_dir: Path, attempt: int | None, issues: list[Issue],
                 replies: dict[str, int] | None = None
                 ) -> tuple[str | None, list[Turn], str | None]:
    """(first user message, tool-call turns, final answer) of the scored attempt in the ATIF
    trajectory; evaluator turns are left out. Empty when the agent wrote no trajectory.
    `replies`, when given, receives the agent's reply counts over every attempt."""
    path = trial_dir / "agent" / TRAJECTORY_FILE
    data = read_json_dict(path, issues) if path.is_file() else {}
    if replies is not None:
        replies.update(_reply_counts(data))
    user: str | None = None
    turns: list[Turn] = []
    final: str | None = None
    for step in data.get("steps") or []:
        if not isinstance(step, dict):
            continue
        extra = step.get("extra") if isinstance(step.get("extra"), dict) else {}
        if extra.get("role") == "evaluator":
            continue
        if attempt is not None and extra.get("attempt", attempt) != attempt:
            continue
        message = step.get("message") if isinstance(step.get("message"), str) else ""
        if step.get("source") == "user" and user is None:
            user = message
        if step.get("source") != "agent":
            continue
        observations = _observations(step)
        calls = [c for c in step.get("tool_calls") or [] if isinstance(c, dict)]
        for call in calls:
            turns.append(Turn(text=message, tool=str(call.get("function_name")),
                              arguments=call.get("arguments"), step_id=int(step.get("step_id", 0)),
                              observation=observations.get(call.get("tool_call_id"))))
        if not calls and message:
            final = message
    return user, turns, final


def _reply_counts(data: dict[str, Any]) -> dict[str, int]:
    agent = [s for s in data.get("steps") or [] if isinstance(s, dict)
             and s.get("source") == "agent"
             and (s.get("extra") if isinstance(s.get("extra"), dict) else {}).get("role")
             != "evaluator"]
    unparsed = sum(1 for s in agent
                   if isinstance(s.get("message"), str) and UNPARSED_CALL_TAG in s["message"])
    return {"agent_replies": len(agent), "unparsed_call_replies": unparsed}


def _observations(step: dict[str, Any]) -> dict[Any, str]:
    observation = step.get("observation")
    results = observation.get("results") if isinstance(observation, dict) else None
    return {r.get("source_call_id"): str(r.get("content"))
            for r in results or [] if isinstance(r, dict) and r.get("source_call_id")}


def read_scored_calls(trial_dir: Path, issues: list[Issue]
                      ) -> tuple[dict[str, Any], int | None, list[BankCall]]:
    """(the verifier's tsq.json, the scored attempt, its calls as the bank recorded them):
    the bank's log when the trial has one, else the verifier's copy in tsq.json."""
    tsq_path = trial_dir / "verifier" / TSQ_DETAILS_FILE
    tsq = read_json_dict(tsq_path, issues) if tsq_path.is_file() else {}
    choice = tsq.get("scored_attempt")
    verifier_choice = choice if _is_count(choice) else None
    log = intents_log(trial_dir)
    if log is not None:
        raw_calls, accepts = read_bank_log(log, issues)
    else:
        # No log downloaded: the verifier's copy of the scored attempt's calls.
        raw_calls, accepts = _calls_from_tsq(tsq, verifier_choice), []
        if tsq:
            issues.append(Issue(str(trial_dir), "no intents log; calls taken from tsq.json"))
    return (tsq, *scored_calls(raw_calls, accepts, verifier_choice))


def reply_counts(trial_dir: Path, issues: list[Issue]) -> dict[str, int]:
    """`agent_replies` and `unparsed_call_replies` (see TrialInputs) from the trajectory."""
    path = trial_dir / "agent" / TRAJECTORY_FILE
    return _reply_counts(read_json_dict(path, issues) if path.is_file() else {})


def read_trial_inputs(trial_dir: Path, scenario_id: str, issues: list[Issue]) -> TrialInputs:
    tsq, attempt, calls = read_scored_calls(trial_dir, issues)
    task = task_dir(trial_dir, issues)
    expected_tools, goals, goal_tools = _expected(task, tsq, trial_dir, issues)
    replies: dict[str, int] = {}
    user, turns, final = conversation(trial_dir, attempt, issues, replies)
    instruction = (_read_text(task / "instruction.md") if task else None) or user
    return TrialInputs(
        scenario_id=scenario_id, instruction=instruction, calls=calls, scored_attempt=attempt,
        expected_tools=expected_tools, goals=goals, goal_tools=goal_tools,
        known_tools=_known_tools(task, issues),
        turns=turns, dialogue=read_dialogue(trial_dir, attempt, issues), final_answer=final,
        **replies,
    )
