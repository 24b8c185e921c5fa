"""What a labelling method produces for each scenario.

A goal's label has one shape from the labeller to the task files: `contracts.expected.GoalLabel`
(position, text, alternative tools or no tool, reason), the entry `tests/expected.json` holds.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from contracts.expected import GoalLabel, LabelsQuality


class LabelsError(Exception):
    """A labels option or file that cannot be used; the message names the culprit."""


def decided(index: int, text: str, tools: list[str] | None = None, no_tool: bool = False,
            reason: str | None = None) -> GoalLabel:
    """One goal's label: `tools` (alternatives, first preferred), or `no_tool`, or neither
    (the method found nothing and does not say no tool serves)."""
    return GoalLabel(index=index, text=text, tools=list(tools or []), no_tool=no_tool,
                     reason=reason)


class ScenarioLabels(BaseModel):
    expected_tools: list[str] = Field(description="Multiset in goal order (the set-F1 side).")
    goals: list[GoalLabel] = Field(
        description="One label per goal, in goal order; tools null throughout for a "
        "per-scenario labelling (no mapping of tools to goals).")

    @classmethod
    def from_goals(cls, goals: list[GoalLabel]) -> ScenarioLabels:
        """Per-goal labels; expected_tools takes each served goal's preferred tool."""
        return cls(expected_tools=[g.tools[0] for g in goals if g.tools], goals=goals)

    @classmethod
    def per_scenario(cls, expected_tools: list[str], goals: list[str]) -> ScenarioLabels:
        """Tools for the scenario as a whole, none mapped to a goal."""
        return cls(expected_tools=expected_tools,
                   goals=[GoalLabel(index=i, text=g, tools=None) for i, g in enumerate(goals)])

    @property
    def mapped(self) -> bool:
        """The method maps tools to goals (a per-scenario labelling does not)."""
        return all(g.tools is not None for g in self.goals)


class LabelSet(BaseModel):
    method: str = Field(
        description="'keyword', 'match', 'intent', 'sentence', 'semantic', 'model' or 'file'.")
    version: str
    source: str | None = Field(None, description="Labels file for 'file'.")
    produced_by: str | None = Field(None, description="What made a labels file, if it says.")
    quality: LabelsQuality | None = Field(None, description="Measured held-out quality.")
    scenarios: dict[str, ScenarioLabels]

    @property
    def tag(self) -> str:
        """`method@version`, as recorded in task.toml."""
        return f"{self.method}@{self.version}"
