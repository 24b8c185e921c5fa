"""What a labelling method produces for each scenario."""

from __future__ import annotations

from pydantic import BaseModel, Field


class LabelsError(Exception):
    """A labels option or file that cannot be used; the message names the culprit."""


class ScenarioLabels(BaseModel):
    expected_tools: list[str] = Field(description="Multiset in goal order.")
    goal_tools: list[list[str]] | None = Field(
        None, description="Tools per goal, in goal order; None when the method has no mapping."
    )


class LabelSet(BaseModel):
    method: str = Field(description="'keyword', 'match' or 'file'.")
    version: str
    source: str | None = Field(None, description="Labels file for 'file'.")
    scenarios: dict[str, ScenarioLabels]

    @property
    def tag(self) -> str:
        """`method@version`, as recorded in task.toml."""
        return f"{self.method}@{self.version}"
