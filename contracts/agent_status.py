"""`<trial>/agent/agent_status.json`: how the agent's trial ended, written once when it ends.

The agent writes it; analysis reads it to tell a measure of the agent (`ok`, `agent_error`)
from a trial spoiled by the serving side (`infra_error`) or by the benchmark's own machinery in
the task environment (`harness_error`), which are kept out of quality metrics.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from contracts.bounds import Count

AGENT_STATUS_FILE = "agent_status.json"
# The agent whose report analysis believes (by the import path Harbor records in a trial's
# config): the project's own. Any other agent's status says nothing about who failed.
PROJECT_AGENT = "agents.banking:BankingAgent"

Status = Literal["ok", "agent_error", "infra_error", "harness_error"]


class AgentStatus(BaseModel):
    """`<trial>/agent/agent_status.json`."""

    status: Status = Field(
        description="ok: the agent finished; agent_error: the model or agent misbehaved "
        "(no usable answer, request rejected as invalid, step limit); infra_error: the server "
        "was unreachable, refused the configuration, or kept failing past the retries; "
        "harness_error: the task environment's bank could not be used."
    )
    reason: str | None = Field(None, description="One line saying what went wrong.")
    attempts: Count = Field(0, description="Self-evaluation attempts made.")
    accepted_attempt: Count | None = Field(None, description="Attempt marked with `bank accept`.")
    llm_calls: Count = 0
    failed_llm_calls: Count = 0
