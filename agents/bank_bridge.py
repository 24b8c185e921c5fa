"""The agent's only way to act: the mock bank program inside the task environment.

Tools are listed with `/app/bank tools`; each call runs `/app/bank call <tool> '<json>'
--attempt N`, so the bank (not the agent) records the intent the verifier scores. The bank's
stdout goes back to the model as the observation, errors included: a wrong call is something
the model should see and may correct, never a crash of the agent. In conversation mode the
agent's replies to the customer go through `/app/bank say - --attempt N`, whose answer (the
customer's next message) is a `contracts.conversation.SayReply`; a failed `say` raises,
naming whose failure it was (`CustomerFailed.cause`).

The model's text never stands on a command line of `say`, which runs as root for the llm
customer: it travels in the command's environment (`SAY_MESSAGE_ENV`) and reaches the bank
on its stdin. Text no process can be given (NUL, lone surrogates) is replaced first.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pydantic import ValidationError

from contracts.conversation import EXIT_CUSTOMER_MODEL_FAILED, EXIT_USAGE, SayReply

BANK = "/app/bank"
MAX_OBSERVATION_CHARS = 4000  # keeps one odd reply from flooding the context
SAY_MESSAGE_ENV = "BANK_SAY_MESSAGE"
# The most of one message `say` passes on (the bank's log keeps 16 kB of it): well inside
# what one environment variable may hold (128 KiB).
MAX_SAY_BYTES = 64 * 1024
# The llm customer's endpoint failures that are the server's: it could not be reached, timed
# out, shed load or failed, or refused the configuration. Any other (a request rejected for
# what it held, an answer with no message) followed from the agent's words.
_SERVER_ERRORS = {"timeout", "connection"}
_SERVER_STATUSES = {401, 403, 404, 429}


class ExecLike(Protocol):
    async def exec(self, command: str, cwd: str | None = None, env: dict | None = None,
                   timeout_sec: int | None = None, user: str | int | None = None) -> Any: ...


class BankUnavailable(Exception):
    """`bank tools` failed: the environment is broken, not the agent."""


Cause = Literal["endpoint", "message", "harness"]


class CustomerFailed(Exception):
    """`bank say` gave no customer message. `cause`: "endpoint" when the llm customer's
    model server failed (the serving side's fault), "message" when the agent's message was
    refused or left the customer with nothing to say (the agent's), "harness" when the
    bank/customer machinery failed."""

    def __init__(self, message: str, cause: Cause = "harness",
                 simulator_calls: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.cause = cause
        self.simulator_calls = simulator_calls or []  # the endpoint's failed requests


@dataclass
class BankReply:
    ok: bool  # exit code 0
    text: str  # what the model sees


async def list_tools(env: ExecLike, timeout_sec: int = 60) -> list[dict[str, Any]]:
    """The OpenAI function tools the bank offers."""
    result = await env.exec(f"{BANK} tools", timeout_sec=timeout_sec)
    if result.return_code != 0:
        raise BankUnavailable(
            f"`{BANK} tools` exited {result.return_code}: {(result.stderr or '').strip()[:300]}"
        )
    try:
        tools = json.loads(result.stdout or "")
    except json.JSONDecodeError as exc:
        raise BankUnavailable(f"`{BANK} tools` printed no JSON list: {exc}") from None
    if not isinstance(tools, list):
        raise BankUnavailable(f"`{BANK} tools` printed {type(tools).__name__}, not a list")
    return tools


def passable(text: str) -> str:
    """`text` as a process can be given it (argv, environment): NUL and lone surrogates,
    which no process can receive, replaced."""
    return text.replace("\x00", "\ufffd").encode("utf-8", "replace").decode("utf-8")


def call_command(tool: str, arguments_json: str, attempt: int, bank: str = BANK) -> str:
    """Shell command for one call, run as the agent's own user; every piece the model
    controls is quoted."""
    return (f"{bank} call {shlex.quote(passable(tool))} {shlex.quote(passable(arguments_json))}"
            f" --attempt {int(attempt)}")


async def call_tool(env: ExecLike, tool: str, arguments_json: str, attempt: int,
                    timeout_sec: int = 60) -> BankReply:
    result = await env.exec(call_command(tool, arguments_json, attempt), timeout_sec=timeout_sec)
    text = (result.stdout or "").strip() or (result.stderr or "").strip()
    if not text:
        text = json.dumps({"error": f"bank exited {result.return_code} with no output"})
    if len(text) > MAX_OBSERVATION_CHARS:
        text = text[:MAX_OBSERVATION_CHARS] + " …(truncated)"
    return BankReply(ok=result.return_code == 0, text=text)


async def accept(env: ExecLike, attempt: int, timeout_sec: int = 60) -> bool:
    result = await env.exec(f"{BANK} accept {int(attempt)}", timeout_sec=timeout_sec)
    return result.return_code == 0


def say_command(attempt: int, bank: str = BANK) -> str:
    """`say` with the message on stdin, from the command's environment (`say_env`)."""
    return f'printf %s "${SAY_MESSAGE_ENV}" | {bank} say - --attempt {int(attempt)}'


def say_env(message: str) -> dict[str, str]:
    data = passable(message).encode()
    if len(data) > MAX_SAY_BYTES:
        data = data[:MAX_SAY_BYTES] + b" [...]"
    return {SAY_MESSAGE_ENV: data.decode("utf-8", "ignore")}


async def say(env: ExecLike, message: str, attempt: int, customer_env: dict[str, str] | None,
              timeout_sec: int = 60) -> SayReply:
    """Send the agent's reply to the customer; the customer's answer. `customer_env` goes
    into that one command's environment only (it may hold the customer endpoint's key), run
    as root: the bank service takes customer settings from root's `bank say` alone, so the
    agent's own commands cannot choose the customer."""
    as_root = {"user": "root"} if customer_env else {}
    result = await env.exec(say_command(attempt), env={**say_env(message), **(customer_env or {})},
                            timeout_sec=timeout_sec, **as_root)
    detail = ((result.stderr or "").strip() or (result.stdout or "").strip())[:300]
    if result.return_code == EXIT_CUSTOMER_MODEL_FAILED:
        calls = _failed_calls(result.stdout)
        cause: Cause = "endpoint" if _server_failed(calls) else "message"
        raise CustomerFailed(f"the llm customer's endpoint failed: {detail or '(no output)'}",
                             cause=cause, simulator_calls=calls)
    if result.return_code == EXIT_USAGE:
        raise CustomerFailed(f"`{BANK} say` refused the message: {detail or '(no output)'}",
                             cause="message")
    if result.return_code != 0:
        raise CustomerFailed(f"`{BANK} say` exited {result.return_code}: {detail or '(no output)'}")
    try:
        return SayReply.model_validate_json(result.stdout or "")
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "reply"
        raise CustomerFailed(f"`{BANK} say` printed no valid reply ({where}: {first['msg']}): "
                             f"{(result.stdout or '').strip()[:200]!r}") from None


def _server_failed(calls: list[dict[str, Any]]) -> bool:
    """Whether the llm customer's failed request failed on the server's side."""
    for call in calls:
        error = call.get("error") if isinstance(call.get("error"), dict) else {}
        status = call.get("http_status")
        if error.get("type") in _SERVER_ERRORS or (isinstance(status, int) and (
                status in _SERVER_STATUSES or status >= 500)):
            return True
    return not calls  # nothing said what failed: not the agent's to carry


def _failed_calls(stdout: str | None) -> list[dict[str, Any]]:
    """The llm customer's failed requests, which `say` prints as `{"error", "simulator_calls"}`
    when its endpoint failed; none when the output says nothing readable."""
    try:
        calls = json.loads(stdout or "").get("simulator_calls")
    except (json.JSONDecodeError, AttributeError):
        return []
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []
