"""Conversation mode: the files and messages between the task, its simulated customer, the agent
and the verifier.

In conversation mode a task's agent sees only the customer's first message; the customer (a
part of the task environment, served by the bank service) speaks every later turn. The agent
answers with `bank say '<message>'`, which prints a `SayReply`. The customer's brief (persona,
goals, turn limit) is `environment/customer.json`, readable by the bank service (root) only;
the exchange is appended by the bank service to `/logs/agent/conversation.jsonl`, which the
agent's user cannot write; the verifier reads it. Expected tools never reach the environment.

Turns count customer messages, 0-based: turn 0 is the first message (in instruction.md); the
customer's answer to the agent's n-th `say` is turn n. A tool call made while the agent works
on turn t is logged with `turn` t. The conversation ends when the customer is satisfied (every
goal revealed and answered; it says goodbye) or after the agent's `max_turns`-th `say`.

The environment reads and writes these as plain JSON (standard library only); the host side
(task builder, agent, analysis, tests) uses these models. The conversation log is read by one
rule on both sides: the template's `environment/convread.py` (shipped to `tests/` too) and
`read_conversation_log` here.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

CUSTOMER_FILE = "customer.json"  # in the task's environment/ (→ /app), root-only at run time
CONVERSATION_FILE = "conversation.jsonl"  # in /logs/agent, written by the bank service only
DEFAULT_MAX_TURNS = 10
# The line instruction.md of a conversation-mode task carries; agents recognise the mode by it.
PROTOCOL_LINE = "Protocol: conversation"
# Environment variables `bank say` forwards to the bank service to pick the customer (the
# bank client sends them inside the request, never to a file). Unset: the scripted customer.
CUSTOMER_ENV = ("BANK_CUSTOMER", "BANK_USER_BASE_URL", "BANK_USER_MODEL", "BANK_USER_API_KEY")
# `bank say`'s exit status when the llm customer's model endpoint failed (sysexits'
# EX_TEMPFAIL): its failed request says whether the server failed or the agent's words led to
# it. EXIT_USAGE (EX_USAGE): the message itself was refused. Any other non-zero status means
# the bank/customer machinery failed.
EXIT_CUSTOMER_MODEL_FAILED = 75
EXIT_USAGE = 64

EndReason = Literal["satisfied", "turn_limit"]
CustomerKind = Literal["scripted", "llm"]


class Persona(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    age: int
    occupation: str
    personality_traits: list[str]
    tone: str
    detail_level: str


class CustomerBrief(BaseModel):
    """`environment/customer.json`: what the simulated customer knows."""

    model_config = ConfigDict(extra="forbid")

    scenario_id: str
    persona: Persona
    first_message: str
    goals: list[str] = Field(min_length=1)
    max_turns: int = Field(DEFAULT_MAX_TURNS, ge=1, le=100,
                           description="Most `say` replies the agent gets in one attempt.")


class SayReply(BaseModel):
    """What `bank say '<message>' [--attempt N]` prints (one JSON object)."""

    model_config = ConfigDict(extra="forbid")

    turn: int = Field(ge=1, description="The customer turn this message is.")
    customer: str = Field(description="The customer's message.")
    ended: bool = Field(description="The conversation is over; further `say` changes nothing.")
    end_reason: EndReason | None = None
    customer_kind: CustomerKind = "scripted"
    simulator_calls: list[dict[str, Any]] = Field(
        default_factory=list,
        description="The llm customer's model requests for this turn, as llm_calls.jsonl "
        "records (role 'user_simulator'); the agent appends them to its call log.")


class ConversationEntry(BaseModel):
    """One line of `/logs/agent/conversation.jsonl`."""

    model_config = ConfigDict(extra="allow")

    seq: int = Field(ge=1)
    attempt: int = Field(ge=1)
    turn: int = Field(ge=0)
    speaker: Literal["customer", "agent"]
    text: str
    ended: bool = False
    end_reason: EndReason | None = None
    goal_index: int | None = Field(
        None, description="Customer lines: the goal this line reveals or talks about "
        "(index into the brief's goals); None for greetings and goodbyes.")
    ts: float = Field(description="time.time() when the line was written.")


def read_conversation_log(content: bytes) -> tuple[list[ConversationEntry], int]:
    """(the log's readable lines in file order, how many non-blank lines were not), by the rule
    the bank and the verifier read it with (the template's `convread.py`, pinned equal): each
    line validated strictly, so a string is never taken for a number nor a number for a
    boolean."""
    entries: list[ConversationEntry] = []
    corrupt = 0
    for raw in content.splitlines():
        if not raw.strip():
            continue
        try:
            entries.append(ConversationEntry.model_validate_json(raw, strict=True))
        except ValueError:  # ValidationError is a ValueError
            corrupt += 1
    return entries, corrupt
