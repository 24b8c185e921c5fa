"""The run as Harbor's ATIF trajectory (`<trial>/agent/trajectory.json`), so `harbor view`
shows the conversation: system prompt, request, each model turn with its tool calls and the
bank's replies, evaluator verdicts and retry feedback."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harbor.models.trajectories.agent import Agent
from harbor.models.trajectories.final_metrics import FinalMetrics
from harbor.models.trajectories.metrics import Metrics
from harbor.models.trajectories.observation import Observation
from harbor.models.trajectories.observation_result import ObservationResult
from harbor.models.trajectories.step import Step
from harbor.models.trajectories.tool_call import ToolCall
from harbor.models.trajectories.trajectory import Trajectory
from harbor.utils.trajectory_utils import format_trajectory_json

from agents.records import token_sum
from contracts.atomic import write_atomic
from contracts.llm_calls import LLMCallRecord

TRAJECTORY_FILE = "trajectory.json"


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _metrics(record: LLMCallRecord) -> Metrics:
    return Metrics(
        prompt_tokens=record.prompt_tokens,
        completion_tokens=record.completion_tokens,
        cached_tokens=record.cached_tokens,
        # Timings derive from the call's raw times in llm_calls.jsonl (same request_id).
        extra={"request_id": record.request_id, "retries": record.retries},
    )


def _arguments_dict(raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except (json.JSONDecodeError, ValueError):
        return {"_raw": raw}
    return value if isinstance(value, dict) else {"_raw": raw}


class TrajectoryBuilder:
    def __init__(self, agent_name: str, version: str, model: str, session_id: str,
                 tools: list[dict] | None = None, extra: dict | None = None) -> None:
        self._agent = Agent(name=agent_name, version=version, model_name=model,
                            tool_definitions=tools, extra=extra)
        self._session_id = session_id
        self._steps: list[Step] = []
        self._written: tuple[int, int] | None = None  # (steps, records) at the last write

    def set_tools(self, tools: list[dict]) -> None:
        self._agent.tool_definitions = tools
        self._written = None

    def add(self, source: str, message: str, extra: dict | None = None) -> None:
        self._steps.append(Step(step_id=len(self._steps) + 1, timestamp=_now(),
                                source=source, message=message, extra=extra))  # type: ignore

    def add_model_turn(
        self,
        record: LLMCallRecord,
        message: str,
        calls: list[tuple[str, str, str]] | None = None,  # (call id, tool name, raw args)
        observations: list[tuple[str | None, str]] | None = None,  # (call id, text)
        extra: dict | None = None,
        model_name: str | None = None,
    ) -> None:
        tool_calls = [ToolCall(tool_call_id=cid, function_name=name or "?",
                               arguments=_arguments_dict(args)) for cid, name, args in calls or []]
        known = {tc.tool_call_id for tc in tool_calls}
        results = [ObservationResult(source_call_id=cid if cid in known else None, content=text)
                   for cid, text in observations or []]
        self._steps.append(Step(
            step_id=len(self._steps) + 1, timestamp=_now(), source="agent",
            model_name=model_name, message=message, tool_calls=tool_calls or None,
            observation=Observation(results=results) if results else None,
            metrics=_metrics(record), llm_call_count=1, extra=extra,
        ))

    def write(self, logs_dir: Path, records: list[LLMCallRecord]) -> None:
        # Steps and records only grow, so equal counts mean the file already says this.
        # Formatting the trajectory (tool schemas included) costs ~10 ms of CPU, and the agent
        # publishes again in `finally` after the last attempt's publish.
        if not self._steps or self._written == (len(self._steps), len(records)):
            return
        trajectory = Trajectory(
            session_id=self._session_id, agent=self._agent, steps=self._steps,
            final_metrics=FinalMetrics(
                total_prompt_tokens=token_sum(records, "prompt_tokens"),
                total_completion_tokens=token_sum(records, "completion_tokens"),
                total_cached_tokens=token_sum(records, "cached_tokens"),
                total_steps=len(self._steps),
            ),
        )
        write_atomic(logs_dir / TRAJECTORY_FILE,
                     format_trajectory_json(trajectory.to_json_dict()))
        self._written = (len(self._steps), len(records))
