"""Conversation mode: the agent gets the customer's first message only; a simulated customer,
part of the task environment, speaks every later turn through `/app/bank say`.

A task is in this mode when its instruction carries `contracts.conversation.PROTOCOL_LINE`.
The model then sees the customer's first message alone (not the persona's name, not the
protocol paragraph meant for shell agents). One conversation per self-evaluation attempt:
per customer turn, ReAct steps run on one growing history until the model replies in text;
that reply goes to the customer with `bank say --attempt N`, whose answer joins the history
as the next user message, until the customer ends the conversation.
"""

from __future__ import annotations

import os
from typing import Any

from pydantic import ValidationError

from agents import bank_bridge, text_protocol
from agents.attempt import AttemptResult, TrialIdentity
from agents.options import BankingAgentOptions, ConversationOptions
from agents.react import AttemptRunner, opening_messages
from agents.records import CallLog
from contracts.conversation import CUSTOMER_ENV, PROTOCOL_LINE, SayReply
from contracts.llm_calls import USER_SIMULATOR_ROLE, LLMCallRecord

# Galileo's agent guidance for multi-turn scenarios, in our words: ask for what is missing,
# never make values up, say plainly when no tool fits, answer the customer in plain text.
CONVERSATION_INTRO = (
    "You are a bank's customer-service agent talking with a customer. Serve each of the "
    "customer's requests by calling the bank's tools with correct arguments. When a request "
    "lacks a detail a tool requires, ask the customer for it; never invent account numbers, "
    "amounts, dates, names or any other value. When no tool can serve a request, tell the "
    "customer so plainly. When you have done what you can for now, reply to the customer in "
    "plain text with no tool call; the customer will answer and may bring further requests."
)

_SEPARATOR = "---"
_NAME_LINE = "Customer:"


def is_conversation(instruction: str) -> bool:
    return any(line.strip() == PROTOCOL_LINE for line in instruction.splitlines())


def first_message(instruction: str) -> str:
    """The customer's first message out of a conversation-mode instruction: what precedes the
    `---` line before the protocol paragraph, without the `Customer: <name>` heading."""
    lines = instruction.splitlines()
    protocol = next(i for i, line in enumerate(lines) if line.strip() == PROTOCOL_LINE)
    separators = [i for i in range(protocol) if lines[i].strip() == _SEPARATOR]
    body = lines[:separators[-1]] if separators else lines[:protocol]
    if body and body[0].startswith(_NAME_LINE):
        body = body[1:]
    return "\n".join(body).strip()


def customer_env(opts: ConversationOptions) -> dict[str, str] | None:
    """The environment `bank say` runs with: which customer, and for the llm one its endpoint
    and key. The key is read here, from the agent's environment, and goes nowhere else."""
    if opts.user_simulator == "scripted":
        return None
    kind, base_url, model, key = CUSTOMER_ENV
    env = {kind: "llm", base_url: opts.user_base_url or "", model: opts.user_model or ""}
    secret = os.environ.get(opts.user_api_key_env) if opts.user_api_key_env else None
    if secret:
        env[key] = secret
    return env


def simulator_records(calls: list[dict[str, Any]], ident: TrialIdentity, attempt: int,
                      turn: int) -> list[LLMCallRecord]:
    """The llm customer's requests for customer turn `turn` as call records of this trial."""
    records = []
    for n, raw in enumerate(calls):
        stamped: dict[str, Any] = {"step": 0, **raw, "trial_name": ident.trial_name,
                                   "scenario_id": ident.scenario_id, "attempt": attempt,
                                   "turn": turn, "role": USER_SIMULATOR_ROLE}
        try:
            records.append(LLMCallRecord.model_validate(stamped))
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            where = ".".join(str(p) for p in first["loc"])
            raise bank_bridge.CustomerFailed(
                f"`bank say` turn {turn}: simulator call {n} is no call record "
                f"({where}: {first['msg']})") from None
    return records


class ConversationRunner:
    """Holds one conversation per attempt over the step loop of an AttemptRunner."""

    def __init__(self, runner: AttemptRunner, opts: BankingAgentOptions, log: CallLog) -> None:
        self.runner, self.opts, self.log = runner, opts, log
        self.env_vars = customer_env(opts)
        # An llm customer waits on its own model request inside `say`.
        self.timeout_s = opts.bank_timeout_s + (
            round(opts.request_timeout_s) if opts.user_simulator == "llm" else 0)

    async def run(self, first: str, attempt: int, feedback: str | None) -> AttemptResult:
        runner = self.runner
        runner.speaking = True
        result = AttemptResult(attempt=attempt)
        # The reviewer's feedback is no customer's word: it goes to the system prompt.
        intro = CONVERSATION_INTRO if not feedback else f"{CONVERSATION_INTRO}\n\n{feedback}"
        messages = runner.open(opening_messages(first, runner.tools, self.opts.tool_mode,
                                                intro, text_protocol.SPEAK_RULE), attempt)
        result.transcript.append(("customer", first))
        turn = 0
        while True:
            reply = await runner.run_turn(messages, result, turn)
            if reply is None:  # max_steps without a word to the customer
                return result
            result.transcript.append(("agent", reply))
            said = await self._say(reply, attempt, result.turns + 1)
            result.turns += 1
            result.transcript.append(("customer", said.customer))
            runner.trace.add("user", said.customer, extra={
                "attempt": attempt, "turn": said.turn, "customer_kind": said.customer_kind,
                "ended": said.ended, "end_reason": said.end_reason})
            if said.ended:
                result.end_reason = said.end_reason
                return result
            messages.append({"role": "user", "content": said.customer})
            turn = said.turn

    async def _say(self, message: str, attempt: int, turn: int) -> SayReply:
        """`bank say`, and the llm customer's requests into the call log (failed ones too)."""
        ident = self.runner.ident
        try:
            said = await bank_bridge.say(self.runner.env, message, attempt, self.env_vars,
                                         timeout_sec=self.timeout_s)
        except bank_bridge.CustomerFailed as exc:
            try:
                for record in simulator_records(exc.simulator_calls, ident, attempt, turn):
                    self.log.append(record)
            except bank_bridge.CustomerFailed:
                pass  # the failure at hand is the one to report
            raise
        for record in simulator_records(said.simulator_calls, ident, attempt, said.turn):
            self.log.append(record)
        return said
