"""`/logs/verifier/tsq.json`: how the verifier arrived at reward.json.

Written as plain JSON by the task's verifier (tasks/banking/template/tests/verify.py, standard
library only); read on the host by analysis through `TsqDetails`. Extra fields are allowed at
every level: the verifier may add details (per-goal scores, argument checks) before readers
know them, and a reader takes only what it understands.

A verifier that failed while scoring writes only `verifier_version`, `reward` (all 0.0) and
`reason`; a missing or unreadable intents file adds `intents` but no `attempts`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

TSQ_DETAILS_FILE = "tsq.json"


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class RecordedCall(_Open):
    seq: Any = None
    attempt: int = Field(description="Self-evaluation attempt the call belongs to (1-based).")
    turn: int = Field(0, description="Customer turn the attempt was on (0 before its first "
                      "`bank say`, and always in single-turn tasks).")
    tool: str = Field(description="Tool name as the agent called it.")
    arguments: Any = None
    valid: bool = Field(
        description="The arguments satisfy the tool's schema, as the verifier checked them again."
    )
    errors: list[Any] = Field(default_factory=list, description="The verifier's findings.")
    bank_valid: bool | None = Field(None, description="What the log's own `valid` flag said.")
    truncated: bool = Field(False, description="The log kept only the head of the arguments.")


class AttemptDetail(_Open):
    attempt: int
    calls: list[RecordedCall] = Field(default_factory=list)
    reward: dict[str, float] = Field(description="The reward numbers this attempt would get.")


GoalStatus = Literal["served", "missed", "declined", "wrongly_served", "unlabelled"]


class GoalMatch(_Open):
    index: int | None = None
    text: str | None = None
    tools: list[str] | None = Field(
        description="The goal's alternative tools (null: unmapped; []: none listed)."
    )
    no_tool: bool = Field(False, description="The labels say no tool serves this goal.")
    called: list[str] = Field(default_factory=list, description="Which of them were called.")
    covered: bool | None = Field(
        description="One of them was called; null when the goal lists no tools."
    )
    status: GoalStatus | None = Field(
        None, description="served / missed (goal with alternatives: one called by name or "
        "not); declined / wrongly_served (no-tool goal: no call, or some call, named a tool "
        "outside every servable goal's alternatives); unlabelled (not judged). Null from "
        "verifiers before per-goal scoring."
    )
    served_valid: bool | None = Field(
        None, description="For a served goal: a serving call also had valid arguments."
    )
    outside: list[str] | None = Field(
        None, description="For a no-tool goal: the calls outside the servable alternatives."
    )


class ConversationSummary(_Open):
    """Conversation-mode tasks: the scored attempt's conversation, from the bank's log."""

    mode: str = "conversation"
    max_turns: int | None = None
    attempt: int = Field(description="The attempt summarised (the scored one).")
    attempts: list[int] = Field(default_factory=list,
                                description="Every attempt with lines in the log.")
    turns: int = Field(description="How many times the attempt spoke (`bank say`); "
                       "reward.json's `turns`.")
    ended: bool = Field(description="The customer ended the conversation.")
    end_reason: Literal["satisfied", "turn_limit"] | None = None
    customer_kind: Any = Field(None, description="'scripted' or 'llm' (a list if mixed).")
    customer: Any = Field(
        None, description="Who answered, as the bank named it: 'scripted customer.py "
        "sha256:…' or 'llm <model> @ <host> prompt sha256:…' (a list if mixed; null from "
        "banks that predate it).")
    goals_revealed: list[int] | None = Field(
        None, description="Indexes of the goals the scripted customer brought up; null for "
        "an llm customer, whose lines are not tied to goals.")
    n_goals_revealed: int | None = None
    n_lines: int = Field(0, description="The attempt's lines in the log, both speakers.")
    log: dict[str, Any] = Field(default_factory=dict,
                                description="path, exists, corrupt_lines[, read_error].")


class TsqDetails(_Open):
    # Defaults on what every verifier writes, so a reader still gets the attempts of a file
    # trimmed to them (as test fixtures and hand-made examples are).
    verifier_version: str | None = None
    reward: dict[str, float] = Field(
        default_factory=dict, description="Exactly what reward.json holds."
    )
    reason: str | None = Field(None, description="Why the score is zero when it is, else null.")
    expected_path: str | None = None
    intents: dict[str, Any] | None = Field(None, description="Counts from the intents log.")
    scenario_id: str | None = None
    attempts: list[AttemptDetail] = Field(
        default_factory=list, description="Every attempt with bank calls, in attempt order."
    )
    scored_attempt: int | None = Field(None, description="The attempt reward.json scores.")
    attempt_selection: str | None = Field(None, description="Why that attempt was scored.")
    actual_tools: list[str] = Field(default_factory=list)
    expected_tools: list[str] = Field(default_factory=list)
    matched: list[str] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list)
    extra: list[str] = Field(default_factory=list)
    goals: list[GoalMatch] = Field(default_factory=list)
    outside: list[str] = Field(
        default_factory=list, description="Calls naming no alternative of any servable goal "
        "(all the calls when no goal lists tools)."
    )
    conversation: ConversationSummary | None = Field(
        None, description="Conversation-mode tasks only: the scored attempt's conversation.")

    def tsq_by_attempt(self) -> dict[int, float]:
        return {a.attempt: a.reward["tsq"] for a in self.attempts if "tsq" in a.reward}
