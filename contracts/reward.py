"""`/logs/verifier/reward.json` (flat numbers, one Harbor metric each)."""

from __future__ import annotations

from pydantic import BaseModel, Field

REWARD_KEYS = (
    "tsq", "precision", "recall", "param_validity", "multiset_f1", "goal_coverage", "solved",
    "goals_served", "goals_declined", "goal_score", "n_goals_servable", "n_goals_no_tool",
    "turns",
)
# Counts, not scores (a perfect agent does not get 1.0 on them): the goal counts and turns.
COUNT_KEYS = ("n_goals_servable", "n_goals_no_tool", "turns")
SCORE_KEYS = tuple(key for key in REWARD_KEYS if key not in COUNT_KEYS)


class Reward(BaseModel):
    tsq: float = Field(description="Set F1 of normalised tool names over the accepted attempt.")
    precision: float
    recall: float
    param_validity: float = Field(
        description="Share of the attempt's calls whose arguments satisfy the tool's schema, "
        "as the verifier re-checks them (the log's own flag is not trusted)."
    )
    multiset_f1: float = Field(description="F1 counting repeated calls of a tool.")
    goal_coverage: float = Field(
        description="Share of goals with listed tools where one was called (recall when none "
        "has); equals goals_served whenever a goal is servable."
    )
    solved: float = Field(
        description="When every goal is labelled: 1.0 when every goal was served or declined "
        "and no call named a tool outside the servable goals' alternatives. Otherwise 1.0 when "
        "the attempt called every tool of expected_tools and no other. Else 0.0."
    )
    goals_served: float = Field(
        description="Share of servable goals (alternatives listed) where one alternative was "
        "called, by name; goal_coverage when there is none (n_goals_servable 0)."
    )
    goals_declined: float = Field(
        description="Share of no-tool goals declined: no call named a tool outside the "
        "servable goals' alternatives. 1.0 when there is none (n_goals_no_tool 0)."
    )
    goal_score: float = Field(
        description="Share of labelled goals handled right (served or declined); "
        "goal_coverage when no goal is labelled."
    )
    n_goals_servable: float = Field(ge=0, description="How many goals list alternatives.")
    n_goals_no_tool: float = Field(ge=0, description="How many goals no tool serves.")
    turns: float = Field(
        ge=0, description="Conversation mode: how many times the scored attempt spoke to the "
        "customer (`bank say`), from the bank's conversation log. 1.0 in single-turn modes "
        "(the one exchange); 0.0 when the verifier failed.")
