"""A task folder's `task.toml [metadata]` and the instruction modes it may be built in.

Written by the task builder (tasks/banking/render.py renders `metadata_toml`); read on the
host by analysis (`read_metadata`: provenance, the trial's mode) and anything else that needs
to know what a task measured. Harbor itself ignores `[metadata]`.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

TASK_TOML = "task.toml"
DATASET_ID = "galileo-ai/agent-leaderboard-v2"

InstructionMode = Literal["goals", "first-message", "conversation"]
# goals: the first message and every goal at once; first-message: the first message alone;
# conversation: a simulated customer in the environment reveals the goals turn by turn.
INSTRUCTION_MODES: tuple[InstructionMode, ...] = get_args(InstructionMode)
DEFAULT_MODE: InstructionMode = "goals"
CONVERSATION_MODE: InstructionMode = "conversation"


class TaskMetadata(BaseModel):
    """`[metadata]` of task.toml. Keys added by newer builders are ignored by older readers;
    `mode` and the fields after it are absent from tasks built before they existed."""

    model_config = ConfigDict(extra="ignore")

    scenario_id: str
    domain: str
    persona_index: int
    n_goals: int
    labels: str = Field(description="'<method>@<version>'.")
    dataset_revision: str
    mode: InstructionMode | None = Field(None, description="How the customer's request is "
                                         "stated (None: built before the field existed).")
    dataset: str | None = Field(None, description="Where the scenarios came from.")
    builder: str | None = Field(None, description="'bankbench <version>'.")
    max_turns: int | None = Field(None, description="Conversation mode only: the most `say` "
                                  "answers the customer gives in one attempt.")


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    # A JSON string is a valid TOML basic string for the characters written here.
    return json.dumps(str(value), ensure_ascii=False)


def metadata_toml(meta: TaskMetadata) -> list[str]:
    """The `[metadata]` table's lines (header first), fields unset left out."""
    return ["[metadata]", *(f"{key} = {_toml_value(value)}"
                            for key, value in meta.model_dump(exclude_none=True).items())]


def metadata_table(task_dir: Path) -> dict[str, Any] | None:
    """task.toml's `[metadata]` table as it stands, or None when task.toml is missing,
    unreadable or has none (the task writer needs only its `scenario_id`, whatever else an
    older builder wrote)."""
    try:
        raw = tomllib.loads((task_dir / TASK_TOML).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    table = raw.get("metadata")
    return table if isinstance(table, dict) else None


def read_metadata(task_dir: Path) -> TaskMetadata | None:
    """A task folder's metadata, or None when task.toml is missing, unreadable or has no
    valid `[metadata]` (a hand-written task, or one from before the contract)."""
    try:
        return TaskMetadata.model_validate(metadata_table(task_dir) or {})
    except ValidationError:
        return None
