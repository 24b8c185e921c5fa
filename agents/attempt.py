"""What one attempt of the ReAct loop produced: the data the loop, the self-evaluator and the
episode share (so none of them imports another for a type)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal


@dataclass
class TrialIdentity:
    trial_name: str
    scenario_id: str
    session_id: str | None


@dataclass
class BankCall:
    """One tool call the attempt sent to the bank, and whether the bank accepted it."""

    name: str
    arguments: str
    ok: bool
    turn: int = 0  # the customer turn the agent was working on


Speaker = Literal["customer", "agent"]


@dataclass
class AttemptResult:
    attempt: int
    calls: list[BankCall] = field(default_factory=list)
    final_answer: str | None = None
    steps: int = 0
    stop_reason: Literal["final_answer", "max_steps"] = "max_steps"
    # Conversation mode: the exchange as it went, the agent's `say`s, why the customer ended.
    transcript: list[tuple[Speaker, str]] = field(default_factory=list)
    turns: int = 0
    end_reason: str | None = None
