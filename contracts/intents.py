"""One line of `/logs/agent/intents.jsonl`, written by the mock bank (its root-run service,
bankd.py, where the environment starts it) for every `bank call`, and the rule that picks the
attempt the verifier scores from it.

The verifier (tasks/banking/template/tests/verify.py · `choose_attempt`, standard library only)
carries its own copy of `scored_attempt`; tests/contracts/test_template_mirrors.py pins the two
equal. A host reader asks the verifier's `tsq.json` first and this rule only for a trial the
verifier never scored."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, Field

INTENTS_FILE = "intents.jsonl"
# Lines the bank records at most (calls and acceptances; the bank's intentlog.py refuses more),
# and past which the verifier scores a log 0 unread (verify.py): no agent's volume of calls can
# run the verifier out of time, which would take its trial out of the quality figures.
MAX_LOG_LINES = 5000


class Intent(BaseModel):
    seq: int = Field(description="Order of the call within the trial, 1-based.")
    attempt: int = Field(description="Self-evaluation attempt that made the call, 1-based.")
    turn: int = Field(0, description="The customer turn the attempt was on: how many times it "
                      "had said something with `bank say` (0 before the first say, and always "
                      "in single-turn tasks). Records from before conversations lack it: 0.")
    tool: str
    arguments: Any = Field(description="Arguments as the agent sent them (may be non-object).")
    valid: bool = Field(
        description="The bank's verdict: tool known and arguments satisfy its schema. The "
        "verifier decides again itself and reports disagreements."
    )
    errors: list[str] = Field(default_factory=list)
    ts: float = Field(description="Unix time of the call.")
    arguments_truncated: bool = Field(
        False, description="Arguments past the bank's size bound were cut (kept as text)."
    )
    arguments_bytes: int | None = Field(None, description="Size of the arguments as sent.")
    tool_truncated: bool = Field(False, description="An over-long tool name was cut.")


class Acceptance(BaseModel):
    """Line written by `bank accept N` (same file, marked by the `accept` key)."""

    accept: int
    ts: float


def scored_attempt(accepted: list[int], call_attempts: Iterable[int]) -> int | None:
    """The attempt the verifier scores: the one the last `bank accept` line names, else the
    highest attempt that made a call; None when the log has neither (the verifier then scores
    attempt 1, which made no call)."""
    if accepted:
        return accepted[-1]
    return max(call_attempts, default=None)
