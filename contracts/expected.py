"""`tests/expected.json` of a task: the tool calls the verifier expects, with their provenance.

Written by the task builder (tasks/banking), read by the verifier inside the environment (as
plain JSON) and by analysis on the host (with these models).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

EXPECTED_FILE = "expected.json"

LabelMethod = Literal["keyword", "match", "file"]


class LabelsInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    method: LabelMethod = Field(description="How the expected tools were derived.")
    version: str = Field(description="Version of the method (for `file`: hash of the file).")
    source: str | None = Field(None, description="Labels file path for `file`, else null.")


class GoalLabel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    index: int = Field(ge=0, description="Position of the goal in the scenario's user_goals.")
    text: str
    tools: list[str] | None = Field(
        description="Tools this goal needs; [] when the method found none; null when the "
        "method does not map tools to goals (e.g. a curated per-scenario file)."
    )


class Provenance(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dataset_revision: str = Field(
        description="HF commit sha, 'sample-<version>', or 'dir:<sha256-16 of the files>'."
    )
    builder: str = Field(description="'bankbench <version>' that wrote the task.")


class Expected(BaseModel):
    model_config = ConfigDict(extra="forbid")

    scenario_id: str = Field(pattern=r"^[a-z]+-\d{3,}$")
    labels: LabelsInfo
    expected_tools: list[str] = Field(
        description="Multiset in goal order: a tool repeats when two goals need it."
    )
    goals: list[GoalLabel]
    provenance: Provenance
