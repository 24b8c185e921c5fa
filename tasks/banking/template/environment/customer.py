"""The simulated customer of a conversation-mode task: its next message from the brief, this
attempt's conversation so far and the agent's latest message.

Two customers (picked per `bank say` by BANK_CUSTOMER, forwarded by the bank client):

- scripted (default): no model, deterministic. Each turn it reveals the next pending goal,
  phrased in the persona's tone and detail level; a clarifying question from the agent gets
  the specifics the current goal contains, a second question on the same goal "I don't know
  more than that" together with the next goal (on the last goal: with a goodbye) — every
  reply moves the conversation on, so an agent that ends each message with a question still
  hears every goal; a refusal is acknowledged and it moves on; once every goal was revealed
  and answered it says goodbye (end_reason "satisfied").
- llm: the user-simulator protocol of the agent leaderboard (persona + scenario goals +
  conversation so far -> the customer's next message, or an end signal) on its own
  OpenAI-compatible endpoint (BANK_USER_BASE_URL, BANK_USER_MODEL, BANK_USER_API_KEY), one
  non-streaming request per turn, timed; a failing endpoint is an error (CustomerError),
  never a made-up message.

Either way the bank service (mockbank.py) applies the turn limit. Standard library only;
runs on Python 3.8+.
"""

from __future__ import annotations

import hashlib
import json
import os
import re

TYPE_CHECKING = False  # typing is imported by type checkers only (start-up cost)
if TYPE_CHECKING:
    from typing import Any

# What an llm customer writes to end the conversation (the leaderboard's own signal).
END_SIGNAL = "CONVERSATION_COMPLETE"
LLM_TIMEOUT_SEC = 60.0  # per request, as the leaderboard's simulator
LLM_MAX_TOKENS = 512
MAX_ERROR_CHARS = 300


def scripted_identity() -> str:
    """Who the scripted customer is: this file's own hash, so two runs name the same customer
    only when its every rule is the same."""
    with open(os.path.abspath(__file__), "rb") as fh:
        digest = hashlib.sha256(fh.read()).hexdigest()
    return "scripted customer.py sha256:" + digest[:12]


class CustomerError(Exception):
    """The customer could not answer (its endpoint failed); `calls` are the failed requests."""

    def __init__(self, message: str, calls: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.calls = calls or []


class BriefError(Exception):
    """customer.json is missing, unreadable or malformed."""


def load_brief(path: str) -> dict[str, Any]:
    """customer.json, checked enough that a conversation cannot trip over it."""
    try:
        with open(path, encoding="utf-8") as handle:
            brief = json.load(handle)
    except (OSError, ValueError) as exc:
        raise BriefError(f"cannot read the customer brief {path}: {exc}") from exc
    persona = brief.get("persona") if isinstance(brief, dict) else None
    goals = brief.get("goals") if isinstance(brief, dict) else None
    max_turns = brief.get("max_turns", 10) if isinstance(brief, dict) else None
    if not isinstance(persona, dict) or not isinstance(brief.get("first_message"), str):
        raise BriefError(f"{path}: needs a persona object and a first_message")
    if not isinstance(goals, list) or not goals or not all(isinstance(g, str) for g in goals):
        raise BriefError(f"{path}: goals must be a non-empty list of texts")
    if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
        raise BriefError(f"{path}: max_turns must be a positive integer")
    return dict(brief, max_turns=max_turns)


# ---------------------------------------------------------------- reading the agent


# Phrases that say a request cannot be served ("’" is folded to "'" before matching).
REFUSAL = re.compile(
    r"\b(can't|cannot|can not|unable|not able|no tool|don't have (a|any) tool|not possible"
    r"|isn't possible|not supported|isn't supported|unsupported|not available to me"
    r"|outside (of )?what i can|beyond what i can)\b")
# Questions that only offer more help: they ask for the next request, not for a detail.
OFFER = re.compile(
    r"\b(anything else|something else|what else|any other|else (can|may|could) i|else i can"
    r"|further (help|assist)|help you with today|how (can|may) i (help|assist)"
    r"|if (you need|there is|there's) anything)\b")
# Requests for a detail written without a question mark.
ASKS = re.compile(
    r"\b(please (provide|confirm|tell|share|specify|give|send|let me know)|let me know"
    r"|could you (provide|confirm|tell|share|specify|give)|i need (your|the|to know))\b")


def classify(message: str) -> str:
    """'question' (asks the customer for a detail), 'refusal' (says it cannot serve the
    request), 'offer' (asks what else is needed) or 'statement' (anything else: an answer)."""
    text = message.lower().replace("\u2019", "'")
    sentences = [s for s in re.split(r"(?<=[?.!])\s+|\n+", text) if s.strip()]
    asks = [s for s in sentences if ("?" in s or ASKS.search(s)) and not OFFER.search(s)]
    if asks:
        return "question"
    if REFUSAL.search(text):
        return "refusal"
    if OFFER.search(text):
        return "offer"
    return "statement"


# ---------------------------------------------------------------- the customer's words


# Wording by tone family: (lead of the first request, lead of later ones, after an answer,
# after a refusal, the goodbye, the turn-limit goodbye, "no more details").
TONES = {
    "formal": ("I would like to", "I would also like to", "Thank you.",
               "I understand that cannot be done here.",
               "That is everything I needed. Thank you very much for your help. Goodbye.",
               "I am afraid I must go now; the rest will have to wait. Goodbye.",
               "I am afraid I do not know more than that."),
    "casual": ("Can you help me", "Oh, and can you help me", "Awesome, thanks!",
               "Ah, okay, no worries if that can't be done.",
               "That's everything, thanks a lot! Bye!",
               "I've got to run, we'll sort out the rest another time. Bye!",
               "Honestly, I don't know more than that."),
    "brisk": ("I need to", "Next, I need to", "OK.",
              "Understood, you can't do that one.",
              "That's everything. Goodbye.",
              "I'm out of time. Goodbye.",
              "I don't know more than that."),
    "neutral": ("I'd like to", "I'd also like to", "Thanks.",
                "I see, that can't be done here.",
                "That's all I needed, thank you for your help. Goodbye.",
                "I have to go now, so the rest will have to wait. Goodbye.",
                "I don't know more than that."),
}
TONE_WORDS = (
    ("formal", ("formal", "polite", "courteous", "respectful", "professional")),
    ("casual", ("casual", "informal", "friendly", "chatty", "relaxed", "warm", "cheerful")),
    ("brisk", ("urgent", "firm", "direct", "businesslike", "business-like", "impatient",
               "curt", "terse", "demanding", "frustrated", "assertive", "anxious")),
)
CASUAL_LEADS = ("Can you help me", "Oh, and can you help me")  # these take "to <goal>?"


def tone_family(persona: dict[str, Any]) -> str:
    tone = str(persona.get("tone", "")).lower()
    for family, words in TONE_WORDS:
        if any(word in tone for word in words):
            return family
    return "neutral"


def detail_level(persona: dict[str, Any]) -> str:
    """'brief', 'detailed' or 'moderate' from the persona's free-text detail level."""
    level = str(persona.get("detail_level", "")).lower()
    if any(word in level for word in ("brief", "low", "minimal", "terse", "concise", "short")):
        return "brief"
    if any(word in level for word in ("detail", "high", "thorough", "verbose", "elaborate")):
        return "detailed"
    return "moderate"


# The specifics a goal contains: amounts, numbers, dates and days, and capitalised names.
MONTHS = ("January|February|March|April|May|June|July|August|September|October|November"
          "|December")
DETAIL = re.compile(
    r"[$€£]\s?\d[\d,]*(?:\.\d+)?"
    r"|\b\d[\d,./:-]*\d(?:\s?(?:%|percent|dollars|euros|pesos|pounds|am|pm))?\b|\b\d\b"
    rf"|\b(?:{MONTHS})(?:\s+\d{{1,2}})?\b"
    r"|\b(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday|today|tomorrow)\b"
    r"|\b[A-Z][\w'&-]*(?:\s+[A-Z][\w'&-]*)*")


def goal_details(goal: str) -> list[str]:
    """Specifics in the goal's text, in order, without repeats (the first word is not a name
    just for being capitalised)."""
    found: list[str] = []
    for match in DETAIL.finditer(goal):
        text = match.group(0).strip()
        if match.start() == 0 and " " not in text and text[:1].isupper() and text.isalpha():
            continue
        if text and text not in found and not re.fullmatch(r"I(?:'\w+)?", text):
            found.append(text)
    return found


def as_clause(goal: str) -> str:
    """'Move $800 from savings.' -> 'move $800 from savings' (names and acronyms kept)."""
    text = goal.strip().rstrip(".!?").strip()
    if len(text) > 1 and text[0].isupper() and text[1].islower() and not text.startswith("I "):
        text = text[0].lower() + text[1:]
    return text


def request_line(persona: dict[str, Any], goal: str, first: bool) -> str:
    family = tone_family(persona)
    lead = TONES[family][0 if first else 1]
    clause = as_clause(goal)
    line = f"{lead} {'to ' if lead in CASUAL_LEADS else ''}{clause}"
    line += "?" if lead in CASUAL_LEADS else "."
    if detail_level(persona) == "brief":
        line = clause[:1].upper() + clause[1:] + "."
    elif detail_level(persona) == "detailed":
        details = goal_details(goal)
        if details:
            line += f" To be exact: {', '.join(details)}."
    return line


def details_line(persona: dict[str, Any], goal: str) -> str:
    clause = as_clause(goal)
    details = goal_details(goal)
    line = f"What I need is to {clause}."
    if details:
        line += f" The details I have: {', '.join(details)}."
    else:
        line += " I have no other specifics."
    return line


# ---------------------------------------------------------------- the scripted customer


def customer_lines(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in history if e.get("speaker") == "customer" and e.get("turn", 0) > 0]


def scripted_reply(brief: dict[str, Any], history: list[dict[str, Any]], message: str
                   ) -> dict[str, Any]:
    """The next customer line {text, goal_index, kind, ended, end_reason}.

    `history` is this attempt's conversation so far (the log's lines, turn 0 included), the
    agent's latest `message` not among them. The state is read from the customer's own
    earlier lines: which goal it talked about last and whether it already gave its details.
    """
    persona, goals = brief["persona"], brief["goals"]
    tones = TONES[tone_family(persona)]
    earlier = customer_lines(history)
    revealed = [e["goal_index"] for e in earlier if e.get("kind") == "goal"]
    current = revealed[-1] if revealed else None
    asked = [e for e in earlier if e.get("goal_index") == current
             and e.get("kind") in ("details", "no_more")]
    kind = classify(message)
    if current is None:
        return _reveal(persona, goals, 0, "")
    if kind == "question" and not asked:
        return _line(details_line(persona, goals[current]), current, "details")
    # An answer, an offer of more help, a refusal, or a question already answered with every
    # detail there is: the current goal is done with (a stall otherwise: an agent ending each
    # message with a question would never hear the next goal).
    opening = {"refusal": tones[3], "question": tones[6]}.get(kind, tones[2])
    if current + 1 < len(goals):
        return _reveal(persona, goals, current + 1, opening)
    said = f"{opening} {tones[4]}" if kind in ("refusal", "question") else tones[4]
    return dict(_line(said, None, "goodbye"), ended=True, end_reason="satisfied")


def _reveal(persona: dict[str, Any], goals: list[str], index: int, opening: str
            ) -> dict[str, Any]:
    text = request_line(persona, goals[index], first=index == 0)
    return _line(f"{opening} {text}".strip(), index, "goal")


def _line(text: str, goal_index: int | None, kind: str) -> dict[str, Any]:
    return {"text": text, "goal_index": goal_index, "kind": kind, "ended": False,
            "end_reason": None}


def turn_limit_line(brief: dict[str, Any]) -> str:
    return TONES[tone_family(brief["persona"])][5]
