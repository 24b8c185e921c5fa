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
from contracts.llm_calls import LLM_CALLS_FILE, LLMCallRecord

__all__ = ["AGENT_STATUS_FILE", "AgentStatus", "CallLog", "Status", "write_status"]

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

    def token_totals(self) -> tuple[int, int, int]:
        """(prompt incl. cached, cached, completion) over every call, from the server's usage."""
        prompt = sum(r.prompt_tokens or 0 for r in self.records)
        cached = sum(r.cached_tokens or 0 for r in self.records)
        completion = sum(r.completion_tokens or 0 for r in self.records)
        return prompt, cached, completion


def write_status(logs_dir: Path, status: AgentStatus) -> None:
    path = logs_dir / AGENT_STATUS_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(status.model_dump_json(indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)
