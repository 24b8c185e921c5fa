"""Expected tools per goal: `tests/expected.json` of a task, and the curated labels file that
`--labels file:PATH` reads (and `--labels model` writes for review).

`expected.json` is written by the task builder (tasks/banking), read by the verifier inside the
environment (as plain JSON) and by analysis on the host (with these models).

Per goal, a label is either a set of **alternative** tools (any one of them serves the goal) or
an explicit **no tool serves this** mark; `expected_tools` keeps the reference-compatible set
side (what set-F1 TSQ compares against): each served goal's first-listed tool, in goal order.

The labels file comes in two formats, both read by `--labels file:PATH`:

- per scenario (the reference's): `{"banking-007": ["get_account_balance", ...]}`;
- per goal (`LabelsFile`): `{"format": "bankbench-labels/2", "scenarios": {"banking-007":
  {"goals": [{"goal": "...", "tools": ["a", "b"]}, {"goal": "...", "no_tool": true,
  "reason": "..."}]}}}` with optional `produced_by` and `quality`; the bare
  `{"banking-007": {"goals": [...]}}` map (no header) reads the same.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

EXPECTED_FILE = "expected.json"
LABELS_FILE_FORMAT = "bankbench-labels/2"

LabelMethod = Literal["keyword", "match", "intent", "sentence", "semantic", "model", "file"]
# What `tasks build`, a sweep and build_tasks() label with unless told otherwise.
DEFAULT_LABEL_METHOD: LabelMethod = "sentence"


class HeldOutFigure(BaseModel):
    """The method's agreement with one held-out gold set, with its scenario interval."""

    model_config = ConfigDict(extra="forbid")

    gold_set: str = Field(description="The set's name, e.g. 'heldout3' "
                          "(tasks/banking/goldsets/<name>).")
    scenarios: int = Field(ge=1)
    goals: int = Field(ge=1)
    goal_f1: float = Field(ge=0, le=1, description="Micro F1 over the set's goals.")
    goal_f1_low: float = Field(ge=0, le=1, description="95% scenario-bootstrap interval, low.")
    goal_f1_high: float = Field(ge=0, le=1, description="95% scenario-bootstrap interval, high.")
    goal_exact: float = Field(ge=0, le=1, description="Share of goals labelled exactly right.")
    clean: bool = Field(description="Nothing about the method was chosen with this set in view.")
    own_tools: bool = Field(False, description="The set has tools of its own, not the sample's.")


class LabelsQuality(BaseModel):
    """How well the method agreed with gold labels it was never built or tuned on."""

    model_config = ConfigDict(extra="forbid")

    heldout_micro_f1: float = Field(
        ge=0, le=1, description="Micro F1 over goals of the held-out gold set (see "
        "benchmarks/labelling.py): a goal's hit counts once, every wrong tool is a false "
        "positive. With `sets`, the lowest of them."
    )
    heldout_goal_exact: float = Field(
        ge=0, le=1, description="Share of held-out goals labelled exactly right: a non-empty "
        "subset of the gold alternatives, or no tool where no tool serves (with `sets`, the "
        "lowest)."
    )
    measured_with: str = Field(
        description="The gold set and command, e.g. 'goldsets/heldout (103 goals), "
        "benchmarks/labelling.py'."
    )
    sets: list[HeldOutFigure] = Field(
        default_factory=list, description="Every held-out set measured, each with its interval: "
        "the range over them is what is known of the labels on data none of them is (empty in "
        "files written before per-set figures).")


class LabelsInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    method: LabelMethod = Field(description="How the expected tools were derived.")
    version: str = Field(description="Version of the method (for `file`: hash of the file).")
    source: str | None = Field(None, description="Labels file path for `file`, else null.")
    produced_by: str | None = Field(
        None, description="For `file`: the method the file says made it (e.g. "
        "'model@1 <model>'), if it says; else null."
    )
    quality: LabelsQuality | None = Field(
        None, description="The method's measured held-out quality; null when not measured."
    )


class GoalLabel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    index: int = Field(ge=0, description="Position of the goal in the scenario's user_goals.")
    text: str
    tools: list[str] | None = Field(
        description="Alternative tools, any one of which serves this goal (first = preferred); "
        "[] when no tool serves it or the method found none (see no_tool); null when the "
        "method does not map tools to goals (e.g. a per-scenario labels file)."
    )
    no_tool: bool = Field(
        False, description="The method says no tool can serve this goal (tools is then [])."
    )
    reason: str | None = Field(None, description="One line on why, when the method gives one.")

    @model_validator(mode="after")
    def _no_tool_has_no_tools(self) -> GoalLabel:
        if self.no_tool and self.tools:
            raise ValueError(f"goal {self.index}: no_tool is set but tools are listed")
        return self


class GoldPerfect(BaseModel):
    """What an agent making exactly the gold calls scores against this task's labels.

    Computed by the task builder with the verifier's own scoring (tests/scoring.py) when the
    dataset comes with gold labels (the bundled sample, a directory holding
    `gold_labels.json`); null for data without gold (the hub). The agent calls each servable
    gold goal's first alternative once and nothing for a goal no tool serves."""

    model_config = ConfigDict(extra="forbid")

    gold: str = Field(description="Where the gold labels came from, e.g. 'sample "
                      "gold_goals.json'.")
    tsq: float = Field(ge=0, le=1)
    solved: float = Field(ge=0, le=1)
    goal_score: float = Field(ge=0, le=1)
    goals_declined: float = Field(ge=0, le=1)
    n_goals_servable: int = Field(ge=0, description="Goals the labels list tools for: with "
                                  "0, goal_score falls back to goal coverage.")
    n_goals_no_tool: int = Field(ge=0, description="Goals the labels mark no-tool: with 0, "
                                 "goals_declined is vacuous (1.0).")


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
        description="Multiset in goal order (the set-F1 side): each served goal's preferred "
        "tool; a tool repeats when two goals need it."
    )
    goals: list[GoalLabel]
    provenance: Provenance
    gold_perfect: GoldPerfect | None = Field(
        None, description="The gold-perfect agent's scores against these labels; null when "
        "the dataset has no gold labels (not measured)."
    )


class GoalEntry(BaseModel):
    """One goal of a per-goal labels file: alternatives, or no tool."""

    model_config = ConfigDict(extra="forbid")

    goal: str | None = Field(
        None, description="The goal's text, for the reviewer; when given it must match the "
        "dataset's goal at this position, so a shifted list is caught."
    )
    tools: list[str] = Field(
        default_factory=list, description="Alternative tools, any one serves (first preferred)."
    )
    no_tool: bool = Field(False, description="No tool can serve this goal.")
    reason: str | None = Field(None, description="One line on why (kept in expected.json).")

    @model_validator(mode="after")
    def _one_decision(self) -> GoalEntry:
        if self.no_tool == bool(self.tools):
            raise ValueError("give either tools (any one serves the goal) or no_tool: true")
        if len(set(self.tools)) != len(self.tools):
            raise ValueError(f"tools repeat a name: {self.tools}")
        return self


class ScenarioEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    goals: list[GoalEntry] = Field(description="One entry per user goal, in goal order.")


class LabelsFile(BaseModel):
    """The per-goal labels file (`--labels file:PATH`; `--labels model` writes one)."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["bankbench-labels/2"] = LABELS_FILE_FORMAT
    produced_by: str | None = Field(
        None, description="What made the labels (e.g. 'model@1 <model> via <endpoint>'); a "
        "reviewer who edits the file may say so here."
    )
    quality: LabelsQuality | None = None
    scenarios: dict[str, ScenarioEntry]


def expected_path(task_dir: Path) -> Path:
    """Where a task folder keeps its labels."""
    return Path(task_dir) / "tests" / EXPECTED_FILE


def read_expected(task_dir: Path) -> Expected:
    """A task's `tests/expected.json` (OSError when it cannot be read, ValidationError when
    it is not an `Expected`): the one parse every host-side reader goes through."""
    return Expected.model_validate_json(expected_path(task_dir).read_bytes())
