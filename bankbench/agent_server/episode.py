"""One request = one episode of the banking agent against a private copy of a task's bank.

The episode is the same one `harbor run --agent agents.banking:BankingAgent` runs (same
options, same records): `<out>/<request id>/agent/` receives `llm_calls.jsonl`,
`trajectory.json`, `agent_status.json` and the bank's own `intents.jsonl`.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from pathlib import Path

from harbor.models.agent.context import AgentContext
from harbor.models.trial.paths import TrialPaths

from agents.attempt import TrialIdentity
from agents.banking import AGENT_NAME, AGENT_VERSION
from agents.episode import Episode
from agents.records import write_status
from agents.trajectory import TrajectoryBuilder
from bankbench.agent_server.bankenv import BankEnvironment, BankEvent
from bankbench.agent_server.models import InvokeResponse, ServerConfig, ToolStep

INSTRUCTION_FILE = "instruction.md"


class UnknownScenario(LookupError):
    """The request names a scenario the tasks folder does not have."""


def scenario_ids(tasks_dir: Path) -> list[str]:
    """Task folders that carry a bank, sorted (the first is the free-form message's bank)."""
    return sorted(p.name for p in tasks_dir.iterdir()
                  if (p / "environment" / "bank").is_file())


def task_dir(tasks_dir: Path, scenario: str) -> Path:
    # Only names listed in the folder: a request cannot reach a path of its choosing.
    if scenario not in scenario_ids(tasks_dir):
        raise UnknownScenario(f"unknown scenario {scenario!r} (not a task in {tasks_dir})")
    return tasks_dir / scenario


def tool_step(event: BankEvent) -> ToolStep | None:
    """A `bank call <tool> <json> --attempt N` as a trajectory step; other commands: None."""
    argv = event.argv
    if len(argv) < 2 or argv[0] != "call":
        return None
    attempt = int(argv[argv.index("--attempt") + 1]) if "--attempt" in argv[:-1] else 1
    raw = argv[2] if len(argv) > 2 and argv[2] != "--attempt" else "{}"
    try:
        arguments = json.loads(raw)
    except json.JSONDecodeError:
        arguments = raw  # what the model sent, unparsed: the bank rejected it too
    text = event.result.stdout.strip() or event.result.stderr.strip()
    return ToolStep(attempt=attempt, tool=argv[1], arguments=arguments,
                    ok=event.result.return_code == 0, observation=text)


def new_request_id(scenario: str) -> str:
    # `<scenario>__<suffix>`, as Harbor names trials, so every reader of trial folders agrees.
    return f"{scenario}__{uuid.uuid4().hex[:12]}"


async def run_episode(config: ServerConfig, scenario: str, instruction: str | None,
                      on_step: Callable[[ToolStep], None] | None = None,
                      request_id: str | None = None) -> InvokeResponse:
    """Run the agent on `instruction` (default: the scenario's own) against the scenario's
    bank. Cancelling the caller cancels the episode; the bank's copy is removed either way."""
    task = task_dir(config.tasks_dir, scenario)
    if instruction is None:
        instruction = (task / INSTRUCTION_FILE).read_text(encoding="utf-8")
    rid = request_id or new_request_id(scenario)
    logs = TrialPaths(config.out_dir / rid).agent_dir  # a trial folder's layout, as Harbor's
    logs.mkdir(parents=True, exist_ok=True)
    steps: list[ToolStep] = []

    def on_call(event: BankEvent) -> None:
        step = tool_step(event)
        if step is not None:
            steps.append(step)
            if on_step is not None:
                on_step(step)

    opts = config.agent
    ident = TrialIdentity(rid, scenario, rid if opts.session_header else None)
    trace = TrajectoryBuilder(AGENT_NAME, AGENT_VERSION, config.model, session_id=rid,
                              extra={"options": opts.model_dump(mode="json")})
    episode = Episode(opts, config.model, logs, ident, trace, AgentContext())
    async with BankEnvironment(task / "environment", logs, on_call) as env:
        try:
            outcome = await episode.run(instruction, env)
        except asyncio.CancelledError as exc:
            # The episode calls any cancellation Harbor's agent timeout; say what it was.
            status = episode.outcome.status
            doing = (status.reason or "").rpartition(" while ")[2] or "running"
            why = exc.args[0] if exc.args else "request cancelled"
            status.reason = f"{why} while {doing}"
            write_status(logs, status)
            raise
    status = outcome.status
    chosen = next((a for a in outcome.attempts if a.attempt == status.accepted_attempt),
                  outcome.attempts[-1] if outcome.attempts else None)
    return InvokeResponse(
        request_id=rid, scenario=scenario, status=status.status, reason=status.reason,
        answer=(chosen.final_answer or "") if chosen else "", trajectory=steps,
        accepted_attempt=status.accepted_attempt, llm_calls=status.llm_calls or 0,
        records=f"{rid}/agent")
