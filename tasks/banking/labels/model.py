"""What a labelling method produces for each scenario."""

from __future__ import annotations

from pydantic import BaseModel, Field

from contracts.expected import LabelsQuality


class LabelsError(Exception):
    """A labels option or file that cannot be used; the message names the culprit."""


class GoalChoice(BaseModel):
    """One goal's label: alternative tools (any one serves), or no tool."""

    tools: list[str] = Field(default_factory=list, description="Alternatives, first preferred.")
    no_tool: bool = Field(False, description="The method says no tool can serve the goal.")
    reason: str | None = None


class ScenarioLabels(BaseModel):
    expected_tools: list[str] = Field(description="Multiset in goal order.")
    goal_tools: list[list[str]] | None = Field(
        None, description="Tools per goal, in goal order; None when the method has no mapping."
    )
    goal_no_tool: list[bool] | None = Field(
        None, description="Per goal: the method says no tool serves it (None: it never says)."
    )
    goal_reasons: list[str | None] | None = None

    @classmethod
    def from_goals(cls, choices: list[GoalChoice]) -> ScenarioLabels:
        """Per-goal choices; expected_tools takes each served goal's preferred tool."""
        return cls(
            expected_tools=[c.tools[0] for c in choices if c.tools],
            goal_tools=[list(c.tools) for c in choices],
            goal_no_tool=[c.no_tool for c in choices],
            goal_reasons=[c.reason for c in choices],
        )

    def choices(self) -> list[GoalChoice] | None:
        """The per-goal labels as choices, or None for a per-scenario labelling."""
        if self.goal_tools is None:
            return None
        no_tool = self.goal_no_tool or [False] * len(self.goal_tools)
        reasons = self.goal_reasons or [None] * len(self.goal_tools)
        return [GoalChoice(tools=t, no_tool=n, reason=r)
                for t, n, r in zip(self.goal_tools, no_tool, reasons, strict=True)]


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
