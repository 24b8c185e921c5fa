"""Read the files of one Harbor trial, job or sweep; each reader returns a model or None.

Readers never raise on bad content: a missing, truncated or invalid file adds an `Issue`
naming the file (and line) and the caller carries on, so one broken trial never hides the
others. Harbor writes `result.json` only when a trial ends, so a running trial has none.

Files an agent could have written (its call log, its status, what it reported to Harbor in
result.json) are read through bounded contracts (`contracts/bounds.py`) and size limits: an
agent-written part out of bounds is unreadable on its own (counted, or None), and never costs
the trial its result.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from harbor.models.trial.paths import TrialPaths
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from analysis.job_paths import JobPaths
from contracts.agent_status import AGENT_STATUS_FILE, AgentStatus
from contracts.bounds import Count, lenient
from contracts.llm_calls import LLM_CALLS_FILE, LLMCallRecord
from contracts.reward import reward_numbers
from contracts.sweep import SWEEP_FILE, SweepManifest
from contracts.tsq import TSQ_DETAILS_FILE, TsqDetails

# The most of one call log read; what lies past it is counted, as unreadable requests.
MAX_CALL_LOG_BYTES = 256 << 20
# The largest JSON file read whole (an agent's trajectory may be anything it wrote).
MAX_JSON_BYTES = 256 << 20


@dataclass(frozen=True)
class Issue:
    """A problem with an input file: shown in the report, never fatal."""

    path: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.message}"


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


class PhaseTiming(_Lenient):
    started_at: datetime | None = None
    finished_at: datetime | None = None

    def seconds(self) -> float | None:
        if self.started_at is None or self.finished_at is None:
            return None
        return (self.finished_at - self.started_at).total_seconds()


class ExceptionView(_Lenient):
    exception_type: str
    exception_message: str = ""
    occurred_at: datetime | None = None


class AgentContextView(_Lenient):
    """What the agent put in Harbor's AgentContext (its own numbers: bounded, None when out
    of bounds, so they never cost the trial its result)."""

    metadata: dict[str, Any] | None = None
    n_input_tokens: lenient(Count) = None  # type: ignore[valid-type]
    n_cache_tokens: lenient(Count) = None  # type: ignore[valid-type]
    n_output_tokens: lenient(Count) = None  # type: ignore[valid-type]


class AgentConfigView(_Lenient):
    import_path: str | None = None
    name: str | None = None


class JobConfigView(_Lenient):
    """The fields of Harbor's `JobConfig` (a job's config.json) that analysis uses."""

    n_concurrent_trials: int | None = None  # left out when Harbor's default (4) was used
    n_attempts: int | None = None


class JobResultView(_Lenient):
    """The fields of Harbor's `JobResult` (a job's result.json) that analysis uses."""

    n_total_trials: int | None = None
    finished_at: str | None = None


class TaskRefView(_Lenient):
    path: str | None = None


class TrialConfigView(_Lenient):
    """The fields of Harbor's `TrialConfig` (a trial's config.json, and its copy inside
    result.json) that analysis uses."""

    agent: AgentConfigView | None = None
    task: TaskRefView | None = None


class VerifierView(_Lenient):
    """Harbor's copy of reward.json, read as the file is (`contracts.reward.reward_numbers`):
    the keys left out, out of their bounds, in `refused`."""

    rewards: dict[str, float | int] | None = None
    refused: list[str] = []

    @model_validator(mode="after")
    def _through_the_contract(self) -> VerifierView:
        if self.rewards is not None:
            self.rewards, self.refused = reward_numbers(self.rewards)
        return self


class TrialResultView(_Lenient):
    """The fields of Harbor's `TrialResult` (result.json) that analysis uses."""

    trial_name: str
    task_name: str
    config: TrialConfigView | None = None
    agent_result: AgentContextView | None = None
    verifier_result: VerifierView | None = None
    exception_info: ExceptionView | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    environment_setup: PhaseTiming | None = None
    agent_setup: PhaseTiming | None = None
    agent_execution: PhaseTiming | None = None
    verifier: PhaseTiming | None = None

    @property
    def agent_import_path(self) -> str | None:
        """The agent Harbor ran, as its job configuration named it (Harbor's record). `harbor
        run --agent module:Class` records the import path as the agent's `name` (Harbor's
        `--agent` takes both; it reads a name with a colon, other than its `acp:` registry
        shorthand, as an import path), `--agent-import-path` as `import_path`."""
        agent = self.config.agent if self.config else None
        if agent is None:
            return None
        name = agent.name or ""
        if agent.import_path is None and ":" in name and not name.startswith("acp:"):
            return name
        return agent.import_path


class AttemptScores(BaseModel):
    """What analysis takes from the verifier's `tsq.json`: TSQ per self-evaluation attempt,
    and how a conversation-mode task's scored conversation ended."""

    by_attempt: dict[int, float] = Field(default_factory=dict)
    scored_attempt: int | None = None
    end_reason: str | None = Field(
        None, description="`conversation.end_reason` (satisfied | turn_limit); None when the "
        "conversation did not end or the task is not a conversation.")
    customer: str | None = Field(
        None, description="`conversation.customer`: who played the customer, as the bank "
        "named it ('mixed: …' when the attempt had several); None outside conversation mode "
        "and from banks that predate the field.")


def _read_json(path: Path, issues: list[Issue]) -> Any | None:
    try:
        with path.open("rb") as file:
            raw = file.read(MAX_JSON_BYTES + 1)
        if len(raw) > MAX_JSON_BYTES:
            issues.append(Issue(str(path), f"larger than {MAX_JSON_BYTES} bytes: not read"))
            return None
        return json.loads(raw.decode("utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        issues.append(Issue(str(path), f"unreadable JSON ({str(exc)[:200]})"))
        return None


def _validate[M: BaseModel](model: type[M], data: Any, path: Path, issues: list[Issue]) -> M | None:
    if data is None:
        return None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or "(root)"
        issues.append(Issue(str(path), f"not a valid {model.__name__}: {loc}: {first['msg']}"))
        return None


def read_trial_result(trial_dir: Path, issues: list[Issue]) -> TrialResultView | None:
    path = TrialPaths(trial_dir).result_path
    result = _validate(TrialResultView, _read_json(path, issues), path, issues)
    if result is not None and result.verifier_result and result.verifier_result.refused:
        issues.append(Issue(str(path), "rewards left out, out of their bounds: "
                                       f"{', '.join(result.verifier_result.refused)}"))
    return result


def read_trial_config(trial_dir: Path, issues: list[Issue]) -> TrialConfigView | None:
    """A trial's config.json (Harbor writes it when the trial starts), or None."""
    path = TrialPaths(trial_dir).config_path
    data = _read_json(path, issues)
    if data is not None and not isinstance(data, dict):
        issues.append(Issue(str(path), "expected a JSON object"))
        return None
    return _validate(TrialConfigView, data, path, issues)


def read_job_config(job_dir: Path, issues: list[Issue]) -> JobConfigView:
    path = JobPaths(job_dir).config_path
    return _validate(JobConfigView, read_json_dict(path, issues), path, issues) or \
        JobConfigView()


def read_job_result(job_dir: Path, issues: list[Issue]) -> JobResultView:
    """A job's result.json (Harbor writes it as the job runs and when it ends)."""
    path = JobPaths(job_dir).result_path
    return _validate(JobResultView, read_json_dict(path, issues), path, issues) or \
        JobResultView()


def read_json_dict(path: Path, issues: list[Issue]) -> dict[str, Any]:
    """A JSON object file (Harbor's job/trial config.json, job result.json), or {}."""
    data = _read_json(path, issues)
    if data is not None and not isinstance(data, dict):
        issues.append(Issue(str(path), "expected a JSON object"))
        return {}
    return data or {}


def read_exception_txt(trial_dir: Path) -> str | None:
    """Last non-empty line of Harbor's `exception.txt` traceback: `Type: message`."""
    path = TrialPaths(trial_dir).exception_message_path
    try:
        lines = [ln for ln in path.read_text(encoding="utf-8", errors="replace").splitlines() if ln]
    except OSError:
        return None
    return lines[-1].strip() if lines else None


def trial_exception(trial_dir: Path,
                    result: TrialResultView | None) -> tuple[str | None, str | None]:
    """The trial's exception as (type, message): Harbor's result.json first, else the last line
    of exception.txt (a trial whose result was never written); (None, None) when there is none."""
    if result is not None and result.exception_info is not None:
        return result.exception_info.exception_type, result.exception_info.exception_message
    if (last := read_exception_txt(trial_dir)) is not None:
        exc_type, _, exc_msg = last.partition(": ")
        return exc_type, exc_msg
    return None, None


def read_agent_status(trial_dir: Path, issues: list[Issue],
                      result: TrialResultView | None = None) -> AgentStatus | None:
    """The agent's own account of how its trial ended.

    Once the trial has a result.json, only what the agent reported to Harbor in its own
    process counts (`agent_result.metadata`, written by Harbor on the host): the `agent/`
    folder is copied out of the task environment, where any agent can write an
    `agent_status.json` of its choosing. Without a result (a running trial) the file is read;
    such a trial is never scored."""
    if result is not None:
        metadata = (result.agent_result.metadata if result.agent_result else None) or {}
        if "status" not in metadata:
            return None
        reported = {"status": metadata["status"], "reason": metadata.get("status_reason"),
                    **{k: metadata[k] for k in ("attempts", "accepted_attempt", "llm_calls")
                       if metadata.get(k) is not None}}
        return _validate(AgentStatus, reported, TrialPaths(trial_dir).result_path, issues)
    path = TrialPaths(trial_dir).agent_dir / AGENT_STATUS_FILE
    return _validate(AgentStatus, _read_json(path, issues), path, issues)


def read_reward_file(trial_dir: Path, issues: list[Issue]) -> dict[str, float] | None:
    """`verifier/reward.json` (`contracts.reward`); used when result.json has no rewards yet."""
    path = TrialPaths(trial_dir).reward_json_path
    data = _read_json(path, issues)
    if data is None:
        return None
    if not isinstance(data, dict):
        issues.append(Issue(str(path), "expected a flat JSON object of numbers"))
        return None
    numbers, refused = reward_numbers(data)
    if refused:
        issues.append(Issue(str(path), f"rewards left out, out of their bounds: "
                                       f"{', '.join(refused)}"))
    return numbers


@dataclass
class CallLog:
    """A trial's call log as read: its valid records and how many requests were unreadable
    (invalid or out-of-bounds lines, lines past the size limit; a running trial's unfinished
    last line is not counted)."""

    records: list[LLMCallRecord]
    unreadable: int = 0


def read_llm_calls(trial_dir: Path, issues: list[Issue]) -> CallLog:
    """Every valid line of `agent/llm_calls.jsonl`; bad lines are reported, counted and
    skipped.

    The agent appends one line per call as it ends, so a running or killed trial may end in
    a partial line: that one is reported as truncated, the earlier lines still count. At most
    MAX_CALL_LOG_BYTES are read; lines past it are counted unreadable.
    """
    path = TrialPaths(trial_dir).agent_dir / LLM_CALLS_FILE
    try:
        with path.open("rb") as log:
            raw = log.read(MAX_CALL_LOG_BYTES)
            past = _count_lines_past(log, raw)
    except FileNotFoundError:
        return CallLog([])
    except OSError as exc:
        issues.append(Issue(str(path), f"unreadable ({exc})"))
        return CallLog([], 1)
    if past:
        raw = raw[:raw.rfind(b"\n") + 1]
        issues.append(Issue(str(path), f"larger than {MAX_CALL_LOG_BYTES} bytes: {past} "
                                       "request(s) past that not read"))
    lines = raw.split(b"\n")
    complete_end = raw.endswith(b"\n") or past
    out = CallLog([], past)
    validate = LLMCallRecord.model_validate_json
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            out.records.append(validate(line))
        except ValidationError as exc:
            last = number == len(lines) and not complete_end
            if last:
                issues.append(Issue(str(path), "truncated last line skipped", number))
                continue
            out.unreadable += 1
            first = exc.errors()[0]
            loc = ".".join(str(p) for p in first["loc"]) or "(line)"
            issues.append(Issue(str(path), f"unreadable record skipped: {loc}: "
                                           f"{first['msg']}", number))
    return out


def _count_lines_past(log: Any, head: bytes) -> int:
    """Lines of an open file beyond `head` (its first MAX_CALL_LOG_BYTES), the partial last
    line of `head` included; 0 when the file ended within `head`."""
    rest = log.read(1 << 20)
    if not rest:
        return 0
    count = 0  # a line cut at the end of `head` ends at the first newline of the rest
    while rest:
        count += rest.count(b"\n")
        last = rest
        rest = log.read(1 << 20)
    return count + (0 if last.endswith(b"\n") else 1)


def read_tsq_details(trial_dir: Path, issues: list[Issue]) -> TsqDetails | None:
    """The verifier's `verifier/tsq.json`, read through `contracts.tsq.TsqDetails`, the one
    shape every verifier version has written (`attempts: [{attempt, calls, reward}]`,
    `scored_attempt`); None when there is none."""
    path = TrialPaths(trial_dir).verifier_dir / TSQ_DETAILS_FILE
    return _validate(TsqDetails, _read_json(path, issues), path, issues)


def read_attempt_scores(trial_dir: Path, issues: list[Issue]) -> AttemptScores | None:
    """TSQ of each self-evaluation attempt and the scored one, from `verifier/tsq.json`."""
    details = read_tsq_details(trial_dir, issues)
    if details is None:
        return None
    conversation = details.conversation  # conversation-mode verifiers only
    return AttemptScores(by_attempt=details.tsq_by_attempt(),
                         scored_attempt=details.scored_attempt,
                         end_reason=conversation.end_reason if conversation else None,
                         customer=_customer(conversation.customer) if conversation else None)


def _customer(value: object) -> str | None:
    if isinstance(value, list):
        return "mixed: " + ", ".join(sorted(str(v) for v in value)) if value else None
    return value if isinstance(value, str) and value else None


def read_sweep_manifest(sweep_dir: Path, issues: list[Issue]) -> SweepManifest | None:
    path = sweep_dir / SWEEP_FILE
    return _validate(SweepManifest, _read_json(path, issues), path, issues)
