"""Files the agent leaves in `<trial>/agent/`: the call log and the trial's status.

`llm_calls.jsonl` gets one line per request as the request ends (flushed, so a trial cut short
by a timeout still leaves every finished call). `agent_status.json` says whether the trial's
result can be trusted as a measure of the agent (`ok`, `agent_error`) or was spoiled by the
serving side (`infra_error`) or by the benchmark's own machinery in the task environment
(`harness_error`); the analysis excludes the latter two from quality metrics.
"""

from __future__ import annotations

from pathlib import Path

from contracts.agent_status import AGENT_STATUS_FILE, AgentStatus, Status
from contracts.atomic import write_atomic
from contracts.llm_calls import LLM_CALLS_FILE, MEASURED_ROLES, LLMCallRecord

__all__ = ["AGENT_STATUS_FILE", "AgentStatus", "CallLog", "Status", "token_sum", "write_status"]


class CallLog:
    """Appends call records to `llm_calls.jsonl` and counts requests for annotation templates."""

    def __init__(self, logs_dir: Path) -> None:
        logs_dir.mkdir(parents=True, exist_ok=True)
        self.path = logs_dir / LLM_CALLS_FILE
        self.records: list[LLMCallRecord] = []
        self._next_index = 0

    def next_request_index(self) -> int:
        index = self._next_index
        self._next_index += 1
        return index

    def append(self, record: LLMCallRecord) -> None:
        self.records.append(record)
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(record.model_dump_json() + "\n")
            fh.flush()

    def measured(self) -> list[LLMCallRecord]:
        """The agent's and evaluator's calls: a simulated customer's are logged, not counted."""
        return [r for r in self.records if r.role in MEASURED_ROLES]

    def token_totals(self) -> tuple[int | None, int | None, int | None]:
        """(prompt incl. cached, cached, completion) over the measured calls, from the
        server's usage.

        None (unknown) when a successful call came without that count: a server that sends
        no usage must not read as 0 tokens. Failed calls have no usage and add nothing.
        """
        measured = self.measured()
        return (token_sum(measured, "prompt_tokens"), token_sum(measured, "cached_tokens"),
                token_sum(measured, "completion_tokens"))


def token_sum(records: list[LLMCallRecord], field: str) -> int | None:
    """Σ `field` over the successful calls; None when one of them lacks it."""
    values = [getattr(r, field) for r in records if r.error is None]
    return None if any(v is None for v in values) else sum(values)


def write_status(logs_dir: Path, status: AgentStatus) -> None:
    write_atomic(logs_dir / AGENT_STATUS_FILE, status.model_dump_json(indent=2) + "\n")
