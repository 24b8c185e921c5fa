"""A task's mock bank in a private temp folder, with the `exec` the agent's bank bridge calls.

Harbor gives the agent an environment whose `exec` runs shell commands inside the task's
container, where the bank is `/app/bank`. Here each request gets its own copy of
`tasks/<id>/environment/` in a fresh temp folder, and `exec` runs only bank commands: the
`/app/bank` prefix becomes that copy, and `BANK_INTENTS` points the bank's record at the
request's own folder. Anything else is refused (exit 126), as the agent issues nothing else.
Every bank call is reported to `on_call` so a streaming response can show tool steps live.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agents.bank_bridge import BANK

INTENTS_FILE = "intents.jsonl"


@dataclass
class ExecResult:
    return_code: int
    stdout: str
    stderr: str


@dataclass
class BankEvent:
    """One bank command and its result, as the agent saw it."""

    argv: list[str]  # after `/app/bank`: ["call", tool, json, "--attempt", "1"], ["tools"], …
    result: ExecResult


class BankEnvironment:
    """Use as `async with BankEnvironment(task_env_dir, record_dir) as env`."""

    def __init__(self, environment_dir: Path, record_dir: Path,
                 on_call: Callable[[BankEvent], None] | None = None) -> None:
        self.source = environment_dir
        self.intents = record_dir / INTENTS_FILE
        self.on_call = on_call
        self._root: Path | None = None

    async def __aenter__(self) -> BankEnvironment:
        self._root = Path(tempfile.mkdtemp(prefix="bankbench-agent-server-"))
        shutil.copytree(self.source, self._root / "app")
        self.intents.parent.mkdir(parents=True, exist_ok=True)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None

    @property
    def root(self) -> Path | None:
        return self._root

    async def exec(self, command: str, cwd: str | None = None, env: dict | None = None,
                   timeout_sec: int | None = None) -> ExecResult:
        if self._root is None:
            raise RuntimeError("BankEnvironment used outside `async with`")
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            return ExecResult(126, "", f"agent-server: unparsable command: {exc}")
        if not argv or argv[0] != BANK:
            return ExecResult(126, "", "agent-server: only bank commands run here")
        app = self._root / "app"
        child_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self._root),
                     "BANK_DIR": str(app), "BANK_INTENTS": str(self.intents),
                     # a socket in a folder that does not exist: the bank runs in-process,
                     # never handing the call to a bank service that may run on this host
                     "BANK_SOCKET": str(self._root / "no-service" / "bank.sock"),
                     **(env or {})}
        # argv, not a shell: the model's text never meets a shell here. -I -S: the bank is
        # standard library only, as inside a task, and skipping the venv's site saves ~15 ms
        # of start-up per call.
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-I", "-S", str(app / "bank"), *argv[1:], cwd=str(app),
            env=child_env, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        try:
            out, err = await asyncio.wait_for(proc.communicate(), timeout_sec)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            return ExecResult(124, "", f"agent-server: bank command took over {timeout_sec} s")
        except asyncio.CancelledError:  # the request was cancelled: leave no process behind
            proc.kill()
            await proc.wait()
            raise
        result = ExecResult(proc.returncode or 0, out.decode(errors="replace"),
                            err.decode(errors="replace"))
        if self.on_call is not None:
            self.on_call(BankEvent(argv[1:], result))
        return result
