"""Shapes at the HTTP boundary and the server's configuration (pydantic, validated once)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agents.options import BankingAgentOptions


class ServerConfig(BaseModel):
    """What `bankbench agent-server` was started with."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    tasks_dir: Path
    out_dir: Path
    agent: BankingAgentOptions
    model: str
    max_concurrency: int = Field(4, ge=1)
    request_timeout_s: float = Field(600.0, gt=0)


class InvokeRequest(BaseModel):
    """`POST /invoke` (NeMo Evaluator `generic`): a scenario, a message, or both.

    `scenario` alone runs that task's instruction against its bank; `message` alone runs the
    message against the banking tools (the first task's bank); both run the message against
    the scenario's bank.
    """

    model_config = ConfigDict(extra="forbid")

    scenario: str | None = Field(None, max_length=200, description="Task id, e.g. banking-000.")
    message: str | None = Field(None, min_length=1, max_length=100_000,
                                description="Free-form customer message.")

    @model_validator(mode="after")
    def _one_of(self) -> InvokeRequest:
        if self.scenario is None and self.message is None:
            raise ValueError("give `scenario`, `message` or both")
        return self


class NatRequest(BaseModel):
    """`POST /generate/full` (NeMo Agent Toolkit protocol): `input_message` is the message, or
    a scenario id exactly (then that task's instruction runs); `scenario` may name the bank."""

    model_config = ConfigDict(extra="ignore")

    input_message: str = Field(min_length=1, max_length=100_000)
    scenario: str | None = Field(None, max_length=200)


class ToolStep(BaseModel):
    """One tool call the agent sent to the bank, as the bank answered it."""

    attempt: int
    tool: str
    arguments: Any
    ok: bool
    observation: str


class InvokeResponse(BaseModel):
    request_id: str
    scenario: str
    status: str  # the episode's agent status: ok / agent_error / infra_error / harness_error
    reason: str | None = None
    answer: str
    trajectory: list[ToolStep]
    accepted_attempt: int | None = None
    llm_calls: int = 0
    # `<request id>/agent` under the output folder: llm_calls.jsonl, trajectory.json,
    # agent_status.json and the bank's intents.jsonl
    records: str


class ErrorBody(BaseModel):
    error: str
    detail: str
