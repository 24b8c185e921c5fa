"""`/logs/verifier/reward.json` (flat numbers, one Harbor metric each), described once: the
verifier writes it (`tasks/banking/template/tests/scoring.py`, which cannot import this and keeps
a copy of `REWARD_KEYS`), and analysis reads it, and Harbor's copy in result.json, through
`reward_numbers`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from contracts.bounds import finite_number

_Score = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
# Counts, not scores: a perfect agent does not get 1.0 on them.
_Count = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class Reward(BaseModel):
    tsq: _Score = Field(description="Set F1 of normalised tool names over the accepted attempt.")
    precision: _Score
    recall: _Score
    param_validity: _Score = Field(
        description="Share of the attempt's calls whose arguments satisfy the tool's schema, "
        "as the verifier re-checks them (the log's own flag is not trusted)."
    )
    multiset_f1: _Score = Field(description="F1 counting repeated calls of a tool.")
    goal_coverage: _Score = Field(
        description="Share of goals with listed tools where one was called (recall when none "
        "has); equals goals_served whenever a goal is servable."
    )
    solved: _Score = Field(
        description="When every goal is labelled: 1.0 when every goal was served or declined "
        "and no call named a tool outside the servable goals' alternatives. Otherwise 1.0 when "
        "the attempt called every tool of expected_tools and no other. Else 0.0."
    )
    goals_served: _Score = Field(
        description="Share of servable goals (alternatives listed) where one alternative was "
        "called, by name; goal_coverage when there is none (n_goals_servable 0)."
    )
    goals_declined: _Score = Field(
        description="Share of no-tool goals declined: no call named a tool outside the "
        "servable goals' alternatives. 1.0 when there is none (n_goals_no_tool 0)."
    )
    goal_score: _Score = Field(
        description="Goals handled right (served or declined) over the labelled goals plus "
        "the distinct tools called that serve no goal (each weighs as one goal mishandled, so "
        "calling every tool is no way up); goal_coverage when no goal is labelled."
    )
    n_goals_servable: _Count = Field(description="How many goals list alternatives.")
    n_goals_no_tool: _Count = Field(description="How many goals no tool serves.")
    turns: _Count = Field(
        description="Conversation mode: how many times the scored attempt spoke to the "
        "customer (`bank say`), from the bank's conversation log. 1.0 in single-turn modes "
        "(the one exchange); 0.0 when the verifier failed.")


REWARD_KEYS = tuple(Reward.model_fields)
SCORE_KEYS = tuple(key for key, field in Reward.model_fields.items()
                   if any(getattr(bound, "le", None) == 1 for bound in field.metadata))
COUNT_KEYS = tuple(key for key in REWARD_KEYS if key not in SCORE_KEYS)

_CHECKS = {name: TypeAdapter(Annotated[(field.annotation, *field.metadata)])
           for name, field in Reward.model_fields.items()}


def reward_numbers(data: Mapping[str, Any]) -> tuple[dict[str, float], list[str]]:
    """(the numbers a reader takes, the keys it refused) from a reward.json or Harbor's copy.

    A key of `Reward` is taken when its field accepts the value (a score in [0, 1], a count
    >= 0, finite); one a verifier older than the key did not write is simply absent. Any other
    key holding a finite number (`contracts.bounds.finite_number`) is kept as it is: a task not
    built here may name its own metric; one holding a number past those bounds is refused."""
    numbers: dict[str, float] = {}
    refused: list[str] = []
    for key, value in data.items():
        check = _CHECKS.get(key)
        if check is None:
            number = finite_number(value)
            if number is not None:
                numbers[key] = number
            elif isinstance(value, int | float) and not isinstance(value, bool):
                refused.append(key)
            continue
        try:
            numbers[key] = float(check.validate_python(value))
        except ValidationError:
            refused.append(key)
    return numbers, refused
