"""`TrialInputs` as rows of NeMo Evaluator's agentic datasets (the RAGAS sample shapes).

Messages follow ragas' `HumanMessage` / `AIMessage` (with `tool_calls: [{name, args}]`) /
`ToolMessage` (`type` = human | ai | tool). The field-by-field mapping and what bankbench
cannot fill is in docs/export.md; the choices that shape scores are made here:

- Predicted tool calls are the bank's record of the scored attempt, in call order, tool names
  mapped to the task's spelling when bankbench's TSQ normalisation says they are the same tool.
- `reference_tool_calls` are the expected tools in goal order (where a goal's labels list
  alternatives, the one the agent called stands for it; a goal no tool serves expects no
  call). The dataset has no gold
  argument values, so a reference call carries the arguments of the agent's matching call when
  the bank accepted them, and a marker the agent never sends when it did not. ToolCallAccuracy
  then reads as: names in the expected order (or the same multiset, unordered), times the
  share of calls with arguments the bank accepted — bankbench's `param_validity`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, Literal

from pydantic import BaseModel, Field

from analysis.trial_inputs import BankCall, TrialInputs, Turn
from contracts.toolnames import normalise_tool_name

# Stands in for "arguments the bank would accept" when the agent's were rejected: no tool of
# the task has this parameter, so ragas' exact-match argument score is 0 for that call.
REJECTED_ARGUMENTS = {"__arguments_accepted_by_bank__": True}
NO_ANSWER = "(the agent gave no final answer)"


class ToolCall(BaseModel):
    name: str
    args: dict[str, Any]


class Message(BaseModel):
    type: Literal["human", "ai", "tool"]
    content: str
    tool_calls: list[ToolCall] | None = None


class ToolCallAccuracyRow(BaseModel):
    """ragas ToolCallAccuracy / NeMo `tool_call_accuracy` (no judge model)."""

    user_input: list[Message]
    reference_tool_calls: list[ToolCall]


class GoalAccuracyRow(BaseModel):
    """ragas AgentGoalAccuracyWithReference / NeMo `agent_goal_accuracy` (judge model)."""

    user_input: list[Message]
    response: str
    reference: str


class TopicAdherenceRow(BaseModel):
    """ragas TopicAdherenceScore / NeMo `topic_adherence` (judge model)."""

    user_input: list[Message]
    reference_topics: list[str] = Field(min_length=1)


def canonical_names(inputs: TrialInputs) -> dict[str, str]:
    """Normalised name → the task's spelling (expected tools first, then the task's tools)."""
    names: dict[str, str] = {}
    alternatives = [name for names in inputs.served_alternatives or [] for name in names]
    for name in [*inputs.expected_tools, *alternatives, *inputs.known_tools]:
        names.setdefault(normalise_tool_name(name), name)
    return names


def as_args(arguments: Any) -> dict[str, Any]:
    """ragas wants an object; anything else the agent sent is kept under `_raw`."""
    if isinstance(arguments, dict):
        return arguments
    return {} if arguments is None else {"_raw": arguments}


def predicted_calls(inputs: TrialInputs) -> list[tuple[BankCall, ToolCall]]:
    names = canonical_names(inputs)
    return [(call, ToolCall(name=names.get(normalise_tool_name(call.tool), call.tool),
                            args=as_args(call.arguments))) for call in inputs.calls]


def reference_names(inputs: TrialInputs, called: list[str]) -> list[str]:
    """Expected tools in goal order. Where a goal lists alternatives (any one serves it), the
    one the agent called stands for the goal; else the preferred (first) one."""
    served = inputs.served_alternatives
    if served is None:
        return list(inputs.expected_tools)
    left = Counter(called)
    names = []
    for alternatives in served:
        name = next((a for a in alternatives if left[a] > 0), alternatives[0])
        left[name] -= 1
        names.append(name)
    return names


def reference_calls(inputs: TrialInputs) -> list[ToolCall]:
    """Expected tools in goal order (`reference_names`); the k-th reference of a tool takes
    its arguments from the agent's k-th call of that tool when the bank accepted it (see the
    module docstring)."""
    by_name: dict[str, list[tuple[BankCall, ToolCall]]] = defaultdict(list)
    predicted = predicted_calls(inputs)
    for call, tool_call in predicted:
        by_name[tool_call.name].append((call, tool_call))
    seen: dict[str, int] = defaultdict(int)
    out = []
    for name in reference_names(inputs, [tool_call.name for _, tool_call in predicted]):
        k = seen[name]
        seen[name] += 1
        made = by_name[name][k] if k < len(by_name[name]) else None
        if made is None:
            args: dict[str, Any] = {}  # never called: the name alone already scores 0
        elif made[0].valid:
            args = made[1].args
        else:
            args = dict(REJECTED_ARGUMENTS)
        out.append(ToolCall(name=name, args=args))
    return out


def _match_turns(inputs: TrialInputs) -> list[Turn | None]:
    """For each bank call, the trajectory turn that issued it (same tool, first unused)."""
    unused = list(inputs.turns)
    matched: list[Turn | None] = []
    for call in inputs.calls:
        key = normalise_tool_name(call.tool)
        turn = next((t for t in unused if normalise_tool_name(t.tool) == key), None)
        if turn is not None:
            unused.remove(turn)
        matched.append(turn)
    return matched


def messages(inputs: TrialInputs) -> list[Message]:
    """The customer's request; per model turn one ai message with that turn's bank calls
    (calls the trajectory does not show get one each), then the replies the agent saw; then
    the final answer."""
    out = [Message(type="human", content=inputs.instruction or "\n".join(inputs.goal_texts))]
    groups: list[list[tuple[ToolCall, Turn | None]]] = []
    for (_, tool_call), turn in zip(predicted_calls(inputs), _match_turns(inputs), strict=True):
        last = groups[-1][-1][1] if groups else None
        if turn is not None and last is not None and last.step_id == turn.step_id:
            groups[-1].append((tool_call, turn))
        else:
            groups.append([(tool_call, turn)])
    for group in groups:
        first = group[0][1]
        out.append(Message(type="ai", content=first.text.strip() if first else "",
                           tool_calls=[tool_call for tool_call, _ in group]))
        out += [Message(type="tool", content=turn.observation) for _, turn in group
                if turn is not None and turn.observation is not None]
    if inputs.final_answer:
        out.append(Message(type="ai", content=inputs.final_answer))
    return out


def goal_reference(inputs: TrialInputs) -> str:
    """The outcome the customer asked for, stated from the goals (no tool names)."""
    if not inputs.goal_texts:
        return ""
    listed = "; ".join(f"({i}) {goal}" for i, goal in enumerate(inputs.goal_texts, start=1))
    return f"Every one of the customer's requests is carried out: {listed}."


def domain_of(scenario_id: str) -> str:
    return scenario_id.rsplit("-", 1)[0] if "-" in scenario_id else "banking"


def rows_for(inputs: TrialInputs) -> dict[str, BaseModel]:
    """One row per metric family for one trial (file stem → row)."""
    conversation = messages(inputs)
    return {
        "tool_call_accuracy": ToolCallAccuracyRow(
            user_input=conversation, reference_tool_calls=reference_calls(inputs)),
        "agent_goal_accuracy": GoalAccuracyRow(
            user_input=conversation, response=inputs.final_answer or NO_ANSWER,
            reference=goal_reference(inputs)),
        "topic_adherence": TopicAdherenceRow(
            user_input=conversation, reference_topics=[domain_of(inputs.scenario_id)]),
    }
