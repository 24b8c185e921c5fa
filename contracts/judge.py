"""A judge model's verdict on one trial: `<trial>/judge/<prompt-version>-<model-slug>.json`.

Written by `bankbench judge` beside the trial, never into `reward.json` (a judge is a second
opinion on the same run, and its figures must not change what the verifier scored). The file
names the prompt (version and SHA-256 of its text) and the judge model, so two judges or two
prompt versions live side by side and a re-run skips what it already judged.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

JUDGE_DIR = "judge"
METRICS = ("tool_selection_quality", "action_completion")


class JudgeAnswer(BaseModel):
    """The strict answer schema the judge must return for each metric."""

    score: float = Field(ge=0.0, le=1.0)
    rationale: str = Field(max_length=2000)


class JudgeSample(BaseModel):
    """One request's outcome: both metrics answered, or why not."""

    status: Literal["ok", "unparseable", "error"]
    tool_selection_quality: JudgeAnswer | None = None
    action_completion: JudgeAnswer | None = None
    raw: str | None = Field(None, description="The answer text when it was unparseable "
                                              "(first 2000 characters).")
    error: str | None = None


class MetricSummary(BaseModel):
    """Mean and spread of one metric over the parsed samples (None when none parsed)."""

    mean: float | None = None
    std: float | None = None
    n: int = 0


class JudgeRecord(BaseModel):
    trial: str
    scenario_id: str
    prompt_version: str
    prompt_sha256: str
    model: str
    base_url: str
    temperature: float
    samples_requested: int
    samples: list[JudgeSample]
    tool_selection_quality: MetricSummary
    action_completion: MetricSummary
    status: Literal["ok", "partial", "unparseable", "error"] = Field(
        description="ok: every sample parsed; partial: some did; unparseable/error: none did.")
    judged_at: datetime


def model_slug(model: str) -> str:
    """A file-name-safe form of a model name (`org/Model-7B` → `org_Model-7B`)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", model).strip("_") or "model"


def record_name(prompt_version: str, model: str) -> str:
    return f"{prompt_version}-{model_slug(model)}.json"
