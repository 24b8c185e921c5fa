"""A trial whose bank cannot be used is the harness's failure, said so in agent_status.json."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from harbor.models.agent.context import AgentContext

from agents.banking import BankingAgent
from analysis.files import read_agent_status
from analysis.status import StatusFacts, classify


class BrokenBankEnv:
    """The task environment with /app/tools.json gone: `bank tools` exits 78, like the bank."""

    def __init__(self) -> None:
        self.commands: list[str] = []

    async def exec(self, command, cwd=None, env=None, timeout_sec=None):
        self.commands.append(command)
        return SimpleNamespace(return_code=78, stdout="",
                               stderr="bank: cannot read /app/tools.json: [Errno 2]")


async def test_unusable_bank_is_a_harness_error(tmp_path: Path):
    trial = tmp_path / "banking-000__abc"
    logs = trial / "agent"
    logs.mkdir(parents=True)
    # Port 9 is discard: nothing answers, and nothing should be asked.
    agent = BankingAgent(logs_dir=logs, model_name="openai/m", base_url="http://127.0.0.1:9/v1")
    env, context = BrokenBankEnv(), AgentContext()
    await agent.run("do something", env, context)

    assert env.commands == ["/app/bank tools"]  # no tool call, no LLM request
    written = json.loads((logs / "agent_status.json").read_text())
    assert written["status"] == "harness_error" and written["llm_calls"] == 0
    assert "bank unavailable" in written["reason"] and "exited 78" in written["reason"]
    assert context.metadata["status"] == "harness_error"

    read = read_agent_status(trial, issues := [])
    assert issues == [] and read is not None
    # Even if the verifier scored the empty intent log, the trial is no quality result.
    status, reason = classify(StatusFacts(
        has_result=True, job_finished=True, own_agent=True, agent_status=read.status,
        agent_reason=read.reason, agent_attempts=read.attempts, has_reward=True))
    assert status == "harness_failed" and "bank unavailable" in reason
