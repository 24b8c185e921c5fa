"""The agent's only way to act: the mock bank program inside the task environment.

Tools are listed with `/app/bank tools`; each call runs `/app/bank call <tool> '<json>'
--attempt N`, so the bank (not the agent) records the intent the verifier scores. The bank's
stdout goes back to the model as the observation, errors included: a wrong call is something
the model should see and may correct, never a crash of the agent.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from typing import Any, Protocol

BANK = "/app/bank"
MAX_OBSERVATION_CHARS = 4000  # keeps one odd reply from flooding the context


class ExecLike(Protocol):
    async def exec(self, command: str, cwd: str | None = None, env: dict | None = None,
                   timeout_sec: int | None = None) -> Any: ...


class BankUnavailable(Exception):
    """`bank tools` failed: the environment is broken, not the agent."""


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


def call_command(tool: str, arguments_json: str, attempt: int, bank: str = BANK) -> str:
    """Shell command for one call; every piece the model controls is quoted."""
    return (f"{bank} call {shlex.quote(tool)} {shlex.quote(arguments_json)} "
            f"--attempt {int(attempt)}")


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
