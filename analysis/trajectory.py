"""What the agent said and saw, from Harbor's ATIF trajectory (`agent/trajectory.json`).

The agent writes the trajectory, so nothing here decides a score: it gives the judge and the
exports the agent's words (its text beside each call, the bank's replies it saw, its final
answer) and counts the replies whose tool call the server did not parse. Evaluator turns
(self-evaluation) are left out. Read leniently: a missing or broken file adds an `Issue` and
leaves the answer empty.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harbor.models.trial.paths import TrialPaths
from pydantic import BaseModel, Field

from analysis.files import Issue, read_json_dict

TRAJECTORY_FILE = "trajectory.json"
UNPARSED_CALL_TAG = "<tool_call>"


class Turn(BaseModel):
    """One tool call as the agent's trajectory shows it, with what the agent saw back."""

    text: str = Field("", description="The agent's text in the step that made the call.")
    tool: str
    arguments: Any = None
    observation: str | None = None
    step_id: int


def read_trajectory(trial_dir: Path, issues: list[Issue]) -> dict[str, Any]:
    path = TrialPaths(trial_dir).agent_dir / TRAJECTORY_FILE
    return read_json_dict(path, issues) if path.is_file() else {}


def conversation(data: dict[str, Any], attempt: int | None
                 ) -> tuple[str | None, list[Turn], str | None]:
    """(first user message, tool-call turns, final answer) of the scored attempt in the
    trajectory `data`; empty when the agent wrote none."""
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
                              arguments=call.get("arguments"), step_id=_step_id(step),
                              observation=observations.get(call.get("tool_call_id"))))
        if not calls and message:
            final = message
    return user, turns, final


def _step_id(step: dict[str, Any]) -> int:
    """The step's number, 0 when the (agent-written) file holds no usable one."""
    value = step.get("step_id")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def reply_texts(data: dict[str, Any]) -> tuple[dict[str, str], list[Any] | None]:
    """(request_id -> the text of the model reply it got, the tool definitions the agent
    sent, None when the trajectory names none): what the integrity classes read beside the
    call log. Each model turn carries its request's id in `metrics.extra.request_id`."""
    texts: dict[str, str] = {}
    for step in data.get("steps") or []:
        if not isinstance(step, dict) or step.get("source") != "agent":
            continue
        metrics = step.get("metrics") if isinstance(step.get("metrics"), dict) else {}
        extra = metrics.get("extra") if isinstance(metrics.get("extra"), dict) else {}
        request_id, message = extra.get("request_id"), step.get("message")
        if isinstance(request_id, str) and isinstance(message, str):
            texts[request_id] = message
    agent = data.get("agent") if isinstance(data.get("agent"), dict) else {}
    tools = agent.get("tool_definitions")
    return texts, tools if isinstance(tools, list) else None


def reply_counts_of(data: dict[str, Any]) -> dict[str, int]:
    """`agent_replies` (agent, not evaluator, model replies over every attempt) and, of those,
    `unparsed_call_replies` (text still holding a `<tool_call>` tag: malformed)."""
    agent = [s for s in data.get("steps") or [] if isinstance(s, dict)
             and s.get("source") == "agent"
             and (s.get("extra") if isinstance(s.get("extra"), dict) else {}).get("role")
             != "evaluator"]
    unparsed = sum(1 for s in agent
                   if isinstance(s.get("message"), str) and UNPARSED_CALL_TAG in s["message"])
    return {"agent_replies": len(agent), "unparsed_call_replies": unparsed}


def reply_counts(trial_dir: Path, issues: list[Issue]) -> dict[str, int]:
    """`reply_counts_of` the trial's trajectory."""
    return reply_counts_of(read_trajectory(trial_dir, issues))


def _observations(step: dict[str, Any]) -> dict[Any, str]:
    observation = step.get("observation")
    results = observation.get("results") if isinstance(observation, dict) else None
    return {r.get("source_call_id"): str(r.get("content"))
            for r in results or [] if isinstance(r, dict) and r.get("source_call_id")}
