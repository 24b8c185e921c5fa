"""`/logs/verifier/reward.json` (flat numbers, one Harbor metric each)."""

from __future__ import annotations

from pydantic import BaseModel, Field

REWARD_KEYS = (
    "tsq", "precision", "recall", "param_validity", "multiset_f1", "goal_coverage", "solved"
)


class Reward(BaseModel):
    tsq: float = Field(description="Set F1 of normalised tool names over the accepted attempt.")
    precision: float
    recall: float
    param_validity: float = Field(
        description="Share of the attempt's calls whose arguments satisfy the tool's schema, "
        "as the verifier re-checks them (the log's own flag is not trusted)."
    )
    multiset_f1: float = Field(description="F1 counting repeated calls of a tool.")
    goal_coverage: float = Field(description="Share of the customer's goals with a matching call.")
    solved: float = Field(
        description="1.0 when the attempt called every expected tool and no other, else 0.0."
    )
