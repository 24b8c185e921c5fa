"""`/logs/verifier/reward.json` (flat numbers, one Harbor metric each)."""

from __future__ import annotations

from pydantic import BaseModel, Field

REWARD_KEYS = ("tsq", "precision", "recall", "param_validity", "multiset_f1", "goal_coverage")


class Reward(BaseModel):
    tsq: float = Field(description="Set F1 of normalised tool names over the accepted attempt.")
    precision: float
    recall: float
    param_validity: float = Field(description="Share of recorded calls whose arguments are valid.")
    multiset_f1: float = Field(description="F1 counting repeated calls of a tool.")
    goal_coverage: float = Field(description="Share of the customer's goals with a matching call.")
