"""`--labels model`: a model on any OpenAI-compatible endpoint labels each goal, and the labels
land in a reviewable per-goal labels file (contracts.expected.LabelsFile) that a person can
edit and feed back with `--labels file:PATH`.

One request per scenario, temperature 0, with the pinned prompt below (PROMPT_VERSION: change
the version with the text). The model sees the tools (name, description, parameter names) and
the numbered goals, and answers JSON: per goal, the tools any one of which serves it, or
`no_tool`, with a one-line reason. An answer that is not that JSON, labels a different number
of goals or names a tool the domain lacks stops labelling with the scenario named (nothing is
written for a build that fails). The key comes from the environment variable `key_env` only
and is never written anywhere.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from contracts.expected import GoalEntry, GoalLabel, LabelsFile, ScenarioEntry
from tasks.banking.dataset import Dataset, Scenario
from tasks.banking.labels.model import LabelsError, LabelSet, ScenarioLabels, decided
from tasks.banking.rows import ToolRow

PROMPT_VERSION = "1"
SYSTEM_PROMPT = """\
You label a bank customer's requests with the bank's tools.
For each numbered goal, list every tool that could serve it on its own (alternatives: any one \
of them is enough), best first. If no tool can carry out the goal (it asks for an \
explanation, for something outside the bank, or for an action no tool performs), mark it \
no_tool. Do not pick a tool only because it shares a word with the goal.
Answer with JSON only, no prose, in exactly this shape:
{"goals": [{"index": 1, "tools": ["tool_name"], "no_tool": false, "reason": "one line"}, ...]}
with one entry per goal, in order."""


class ModelOptions(BaseModel):
    endpoint: str = Field(description="OpenAI-compatible base URL (…/v1).")
    model: str = Field(description="Served model name.")
    key_env: str = Field("OPENAI_API_KEY", description="Environment variable with the key.")
    out: Path | None = Field(None, description="Where the reviewable labels file is written.")
    timeout_s: float = Field(120.0, gt=0, description="Per-request timeout.")
    max_tokens: int = Field(1024, ge=64, description="Upper bound on one answer's length.")
    nvext_annotations: list[str] = Field(
        default_factory=list,
        description="Dynamo nvext annotations, formatted with {scenario_id} and {index} (the "
        "scenario's position in this run): e.g. output_replay_id:labels:{index} for replay.",
    )

    @property
    def version(self) -> str:
        return f"{PROMPT_VERSION}+{self.model}"


class _GoalAnswer(BaseModel):
    index: int
    tools: list[str] = Field(default_factory=list)
    no_tool: bool = False
    reason: str = ""


class _Answer(BaseModel):
    goals: list[_GoalAnswer]


def tool_lines(tools: list[ToolRow]) -> str:
    return "\n".join(
        f"- {t.title}: {t.description} (parameters: {', '.join(t.parameters) or 'none'})"
        for t in tools
    )


def messages(tools: list[ToolRow], goals: list[str]) -> list[dict[str, str]]:
    numbered = "\n".join(f"{n}. {goal}" for n, goal in enumerate(goals, start=1))
    user = f"Tools:\n{tool_lines(tools)}\n\nGoals:\n{numbered}"
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def parse_answer(text: str, goals: list[str], known: set[str], where: str) -> list[GoalLabel]:
    """The model's JSON as per-goal labels; LabelsError naming `where` if it is unusable."""
    start, end = text.find("{"), text.rfind("}")
    try:
        answer = _Answer.model_validate(json.loads(text[start:end + 1]))
    except (ValueError, ValidationError) as exc:
        snippet = " ".join(text.split())[:120]
        raise LabelsError(f"--labels model: {where}: the answer is not the JSON asked for "
                          f"({type(exc).__name__}): {snippet!r}") from None
    if [g.index for g in answer.goals] != list(range(1, len(goals) + 1)):
        raise LabelsError(f"--labels model: {where}: labelled goals "
                          f"{[g.index for g in answer.goals]}, expected 1..{len(goals)}")
    labels = []
    for g, goal in zip(answer.goals, goals, strict=True):
        unknown = [t for t in g.tools if t not in known]
        if unknown:
            raise LabelsError(f"--labels model: {where}: goal {g.index} names unknown tools "
                              f"{', '.join(unknown)}")
        tools = list(dict.fromkeys(g.tools))
        reason = " ".join(g.reason.split()) or None
        if g.no_tool and tools:
            raise LabelsError(f"--labels model: {where}: goal {g.index} is no_tool but lists "
                              "tools")
        labels.append(decided(g.index - 1, goal, tools, no_tool=not tools, reason=reason))
    return labels


def _client(options: ModelOptions) -> Any:
    from openai import OpenAI

    key = os.environ.get(options.key_env) or "not-needed"  # local servers take any key
    return OpenAI(base_url=options.endpoint, api_key=key, timeout=options.timeout_s,
                  max_retries=2)


def ask(client: Any, options: ModelOptions, dataset: Dataset, scenario: Scenario,
        index: int) -> list[GoalLabel]:
    goals = scenario.row.user_goals
    extra: dict[str, Any] = {}
    if options.nvext_annotations:
        values = {"scenario_id": scenario.scenario_id, "index": index}
        extra["nvext"] = {"annotations": [t.format(**values) for t in options.nvext_annotations]}
    from openai import OpenAIError

    try:
        reply = client.chat.completions.create(
            model=options.model, messages=messages(dataset.tools, goals), temperature=0,
            max_tokens=options.max_tokens, stream=False, extra_body=extra or None,
        )
    except OpenAIError as exc:
        raise LabelsError(f"--labels model: {scenario.scenario_id}: {options.endpoint}: "
                          f"{type(exc).__name__}: {exc}") from None
    text = reply.choices[0].message.content or ""
    return parse_answer(text, goals, set(dataset.tool_names), scenario.scenario_id)


def labels_file(options: ModelOptions, scenarios: list[Scenario],
                labelled: dict[str, list[GoalLabel]]) -> LabelsFile:
    return LabelsFile(
        produced_by=f"model@{options.version} via {options.endpoint}",
        scenarios={
            s.scenario_id: ScenarioEntry(goals=[
                GoalEntry(goal=g.text, tools=g.tools or [], no_tool=g.no_tool, reason=g.reason)
                for g in labelled[s.scenario_id]
            ])
            for s in scenarios
        },
    )


def label_set(dataset: Dataset, scenarios: list[Scenario], options: ModelOptions) -> LabelSet:
    client = _client(options)
    labelled: dict[str, list[GoalLabel]] = {}
    for index, scenario in enumerate(scenarios):
        labelled[scenario.scenario_id] = ask(client, options, dataset, scenario, index)
        print(f"[{index + 1}/{len(scenarios)}] labelled {scenario.scenario_id} with "
              f"{options.model}", file=sys.stderr, flush=True)
    if options.out is not None:
        document = labels_file(options, scenarios, labelled)
        options.out.parent.mkdir(parents=True, exist_ok=True)
        options.out.write_text(document.model_dump_json(indent=2, exclude_none=True) + "\n",
                               encoding="utf-8")
        print(f"model labels for review: {options.out} (edit, then build with "
              f"--labels file:{options.out})", file=sys.stderr, flush=True)
    return LabelSet(
        method="model", version=options.version,
        produced_by=f"model@{options.version} via {options.endpoint}",
        scenarios={sid: ScenarioLabels.from_goals(c) for sid, c in labelled.items()},
    )
