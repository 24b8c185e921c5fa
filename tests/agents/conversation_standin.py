"""A stand-in for a conversation-mode task environment, for the agent's unit tests: `bank
tools`, `bank call` and `bank say` answer as `contracts.conversation` says the real bank does,
without the bank service. Not the real customer: it speaks a fixed list of lines, the last one
ending the conversation. The end-to-end test runs the real environment."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from agents.bank_bridge import SAY_MESSAGE_ENV
from contracts.conversation import PROTOCOL_LINE, SayReply

TOOLS = [{"type": "function", "function": {
    "name": name, "description": f"{name} (stand-in).",
    "parameters": {"type": "object", "properties": {}}}}
    for name in ("get_account_balance", "transfer_funds", "freeze_card")]


def conversation_instruction(first: str, name: str = "Dana Whitfield") -> str:
    """An instruction shaped like a conversation-mode task's (heading, message, protocol)."""
    return (f"Customer: {name}\n\n{first}\n\n---\n\n{PROTOCOL_LINE}\n"
            "Answer the customer with `/app/bank say '<message>'`; it prints the customer's "
            "reply as JSON.\n")


@dataclass
class SayFailure:
    code: int
    stdout: str = ""
    stderr: str = ""


@dataclass
class ConversationBankStandIn:
    customer_lines: list[str]
    fail_say: SayFailure | None = None
    simulator_calls: list[dict[str, Any]] = field(default_factory=list)
    calls: list[tuple[int, int, str]] = field(default_factory=list)  # (attempt, turn, tool)
    says: list[tuple[int, str, dict | None]] = field(default_factory=list)  # (attempt, text, env)
    _turn: dict[int, int] = field(default_factory=dict)

    async def exec(self, command: str, cwd: str | None = None, env: dict | None = None,
                   timeout_sec: int | None = None, user: str | None = None) -> SimpleNamespace:
        argv = shlex.split(command)
        message = None
        if "|" in argv:  # `printf %s "$BANK_SAY_MESSAGE" | /app/bank say - ...`
            argv = argv[argv.index("|") + 1:]
            env = dict(env or {})
            message = env.pop(SAY_MESSAGE_ENV)
            env = env or None
        verb, attempt = argv[1], int(argv[-1]) if argv[-2:-1] == ["--attempt"] else 1
        if verb == "tools":
            return _done(json.dumps(TOOLS))
        if verb == "call":
            self.calls.append((attempt, self._turn.get(attempt, 0), argv[2]))
            return _done(json.dumps({"status": "ok"}))
        if verb == "accept":
            return _done("")
        assert verb == "say" and argv[2] == "-" and message is not None, command
        self.says.append((attempt, message, env))
        if self.fail_say:
            return SimpleNamespace(return_code=self.fail_say.code, stdout=self.fail_say.stdout,
                                   stderr=self.fail_say.stderr)
        turn = self._turn[attempt] = self._turn.get(attempt, 0) + 1
        ended = turn >= len(self.customer_lines)
        reply = SayReply(turn=turn, customer=self.customer_lines[turn - 1], ended=ended,
                         end_reason="satisfied" if ended else None,
                         customer_kind="llm" if self.simulator_calls else "scripted",
                         simulator_calls=self.simulator_calls)
        return _done(reply.model_dump_json())


def _done(stdout: str) -> SimpleNamespace:
    return SimpleNamespace(return_code=0, stdout=stdout, stderr="")
