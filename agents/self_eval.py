"""Self-evaluation: a judge call after each attempt, and the feedback a retry starts from.

The evaluator sees the customer's request (in conversation mode: the whole transcript of the
attempt), the tools on offer and the calls the attempt made, and answers
`{is_sufficient, confidence, reasoning, missing_steps}`. Its reply is parsed tolerantly; a
reply that cannot be read counts as "insufficient, confidence 0" (recorded as unparsed) so a
broken judge never accepts an attempt by accident.
"""

from __future__ import annotations

import json

from pydantic import BaseModel, Field

from agents.attempt import BankCall, Speaker
from agents.jsontext import first_json_object


class Verdict(BaseModel):
    """One evaluator judgement, as recorded in AgentContext metadata and the trajectory."""

    attempt: int
    is_sufficient: bool = False
    confidence: float = Field(0.0, ge=0.0, le=1.0)
    reasoning: str = ""
    missing_steps: list[str] = Field(default_factory=list)
    parsed: bool = Field(True, description="False when the evaluator's reply was unreadable.")
    accepted: bool = Field(False, description="is_sufficient and confidence >= min_confidence.")
    request_id: str | None = None


EVALUATOR_SYSTEM = (
    "You review the work of a bank's customer-service agent. Decide whether the tool calls it "
    "made carry out every request of the customer with the right tools and arguments. Reply "
    "with one JSON object and nothing else: "
    '{"is_sufficient": true|false, "confidence": 0.0-1.0, "reasoning": "...", '
    '"missing_steps": ["..."]}'
)
EVALUATOR_CONVERSATION = (
    " The agent held a conversation with the customer. A request counts as handled when the "
    "right tools were called for it, or when the agent told the customer that no tool serves "
    "it or that a required detail was missing and the customer could not give it."
)


def evaluator_messages(instruction: str, tools: list[dict], calls: list[BankCall],
                       final_answer: str | None,
                       transcript: list[tuple[Speaker, str]] | None = None
                       ) -> list[dict[str, str]]:
    """The judge's request. With a transcript (conversation mode) the judge reads the whole
    exchange and each call's turn instead of the request and the final answer."""
    names = ", ".join(str(t.get("function", t).get("name")) for t in tools)
    if calls:
        made = "\n".join(
            f"{i}. {'' if not transcript else f'[turn {c.turn}] '}{c.name}({c.arguments}) -> "
            f"{'ok' if c.ok else 'rejected by the bank'}"
            for i, c in enumerate(calls, 1)
        )
    else:
        made = "(no tool calls)"
    system = EVALUATOR_SYSTEM
    if transcript:
        system += EVALUATOR_CONVERSATION
        said = "\n".join(f"{speaker.capitalize()}: {text}" for speaker, text in transcript)
        user = (f"Conversation:\n{said}\n\nTools available: {names}\n\n"
                f"Tool calls made:\n{made}")
    else:
        user = (
            f"Customer request:\n{instruction}\n\nTools available: {names}\n\n"
            f"Tool calls made:\n{made}\n\nAgent's final answer: {final_answer or '(none)'}"
        )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def parse_verdict(text: str, attempt: int, min_confidence: float) -> Verdict:
    """Read the evaluator's reply; unreadable → insufficient with confidence 0."""
    obj = first_json_object(text or "")
    if obj is None:
        return Verdict(attempt=attempt, parsed=False,
                       reasoning=f"unparseable evaluator output: {(text or '')[:200]!r}")
    lowered = {str(k).lower().replace("-", "_").replace(" ", "_"): v for k, v in obj.items()}
    sufficient = _as_bool(lowered.get("is_sufficient", lowered.get("sufficient")))
    if sufficient is None:
        return Verdict(attempt=attempt, parsed=False,
                       reasoning=f"evaluator gave no is_sufficient: {json.dumps(obj)[:200]}")
    confidence = _as_confidence(lowered.get("confidence"))
    missing = lowered.get("missing_steps") or []
    if isinstance(missing, str):
        missing = [missing]
    verdict = Verdict(
        attempt=attempt,
        is_sufficient=sufficient,
        confidence=confidence,
        reasoning=str(lowered.get("reasoning") or "")[:2000],
        missing_steps=[str(m) for m in missing if m][:20] if isinstance(missing, list) else [],
    )
    verdict.accepted = verdict.is_sufficient and verdict.confidence >= min_confidence
    return verdict


def retry_feedback(verdict: Verdict) -> str:
    """What the next attempt is told about the previous one."""
    missing = "; ".join(verdict.missing_steps) or "not stated"
    return (
        "A reviewer judged a previous attempt at this request insufficient.\n"
        f"Reviewer's reasoning: {verdict.reasoning or 'not stated'}\n"
        f"Missing steps: {missing}\n"
        "Start again from the beginning and make every tool call the request needs."
    )


def _as_bool(value: object) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "yes", "1"):
        return True
    if isinstance(value, str) and value.strip().lower() in ("false", "no", "0"):
        return False
    if isinstance(value, (int, float)):
        return bool(value)
    return None


def _as_confidence(value: object) -> float:
    try:
        number = float(str(value).strip().rstrip("%")) if value is not None else 0.0
    except ValueError:
        return 0.0
    if 1.0 < number <= 100.0:  # a percentage
        number /= 100.0
    return min(max(number, 0.0), 1.0)
