"""Write Harbor job and sweep directories with made-up content, in Harbor's exact layout.

Harbor's own models write `config.json` and `result.json`, so the shapes are the real ones.
Used by the analysis tests (hand-made trials with known answers) and by
`benchmarks/analysis_speed.py` (large synthetic sweeps). Nothing here talks to a server.
"""

from __future__ import annotations

import json
import random
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from harbor.models.agent.context import AgentContext
from harbor.models.job.config import JobConfig
from harbor.models.job.result import JobResult, JobStats
from harbor.models.task.id import LocalTaskId
from harbor.models.trial.config import AgentConfig, TaskConfig, TrialConfig
from harbor.models.trial.error_policy import FailureCause, policy_for
from harbor.models.trial.paths import TrialPaths
from harbor.models.trial.result import AgentInfo, ExceptionInfo, TimingInfo, TrialResult
from harbor.models.verifier.result import VerifierResult

from analysis.job_paths import JobPaths
from contracts.agent_status import AGENT_STATUS_FILE, PROJECT_AGENT
from contracts.expected import Expected, LabelsInfo, Provenance, expected_path
from contracts.llm_calls import LLM_CALLS_FILE, LLMCallRecord
from contracts.sweep import (
    SWEEP_FILE,
    LevelRecord,
    SweepConfig,
    SweepManifest,
    level_dir,
    level_dir_name,
)
from contracts.task import (
    DATASET_ID,
    DEFAULT_MODE,
    TASK_TOML,
    InstructionMode,
    TaskMetadata,
    metadata_toml,
)
from contracts.tsq import TSQ_DETAILS_FILE

T0 = datetime(2026, 1, 1, tzinfo=UTC)
_T0_NS = int(T0.timestamp()) * 1_000_000_000


def write_job(job_dir: Path, n_concurrent: int, *, n_total_trials: int | None = None,
              finished: bool = True) -> Path:
    """Job-level `config.json` and `result.json` (no trials)."""
    job_dir.mkdir(parents=True, exist_ok=True)
    paths = JobPaths(job_dir)
    config = JobConfig(job_name=job_dir.name, jobs_dir=job_dir.parent,
                       n_concurrent_trials=n_concurrent)
    paths.config_path.write_text(config.model_dump_json(indent=4))
    result = JobResult(id=uuid.uuid4(), started_at=T0, n_total_trials=n_total_trials or 0,
                       finished_at=T0 + timedelta(hours=1) if finished else None,
                       stats=JobStats())
    paths.result_path.write_text(result.model_dump_json(indent=4))
    return job_dir


def raw_times(ttft_ms: float | None, itl_ms: list[float] | tuple[float, ...],
              e2e_ms: float | None, send_ns: int = 1_000_000_000) -> dict[str, Any]:
    """The raw times (`send_ns`, `read_ns`, `end_ns`) of a request that shows the given TTFT,
    gaps and E2E: a test states what it wants to see, the record holds what a client records.
    Each read carries one content character."""
    reads: list[int] = []
    if ttft_ms is not None:
        at = send_ns + round(ttft_ms * 1e6)
        reads.append(at)
        for gap in itl_ms:
            at += round(gap * 1e6)
            reads.append(at)
    end = None if e2e_ms is None else send_ns + round(e2e_ms * 1e6)
    return {"send_ns": send_ns, "read_ns": reads, "read_content_chars": [1] * len(reads),
            "end_ns": end}


def record(ttft_ms: float | None = 10.0, itl_ms: list[float] | tuple[float, ...] = (),
           e2e_ms: float | None = 10.0, **fields: Any) -> LLMCallRecord:
    """An LLM call record with defaults for the fields a test does not care about; times
    given in ms become raw times (`raw_times`) unless `send_ns`/`read_ns`/`end_ns` are given."""
    base: dict[str, Any] = dict(
        request_id=uuid.uuid4().hex, trial_name="t", scenario_id="banking-000", attempt=1,
        step=1, role="agent", model="m", start_unix_ns=0, prompt_tokens=100,
        completion_tokens=1, cached_tokens=0, finish_reason="stop", http_status=200,
    )
    if not {"send_ns", "read_ns", "end_ns"} & fields.keys():
        base.update(raw_times(ttft_ms, itl_ms, e2e_ms))
    base.update(fields)
    return LLMCallRecord(**base)


def legacy_line(record: LLMCallRecord, ttft_ms: float | None, itl_ms: list[float],
                e2e_ms: float | None) -> str:
    """One llm_calls.jsonl line as records were written before raw times: derived ms, no
    `send_ns`/`read_*`/`end_ns`/`turn` (for the tests that old job folders still load)."""
    data = record.model_dump(mode="json", exclude={
        "send_ns", "read_ns", "read_content_chars", "read_reasoning_chars",
        "read_tool_call_chars", "end_ns", "turn"})
    data.update(ttft_ms=ttft_ms, itl_ms=itl_ms, e2e_ms=e2e_ms)
    return json.dumps(data)


def write_trial(
    job_dir: Path, trial_name: str, *, scenario_id: str,
    records: list[LLMCallRecord | str] = (),  # type: ignore[assignment]
    rewards: dict[str, float] | None = None, exception_type: str | None = None,
    agent_status: dict[str, Any] | None = None, tsq_details: dict[str, Any] | None = None,
    started_at: datetime = T0, phase_s: tuple[float, float, float, float] = (1, 0.5, 10, 2),
    running: bool = False, truncated_tail: str | None = None, tasks_dir: Path | None = None,
    agent_import_path: str | None = PROJECT_AGENT, failed_in: str | None = None,
) -> Path:
    """One trial folder. `running=True` leaves result.json out, as Harbor does mid-trial.

    The trial's task path is `<tasks_dir>/<scenario_id>` (default `/tasks`, which does not
    exist: its provenance reads as unknown); see `write_task_stub`. The agent is the project's
    own unless `agent_import_path` names another.

    `phase_s` = (environment setup, agent setup, agent run, verifier) durations in seconds.
    An exception happens where Harbor would raise it (`failed_in`: environment, agent_setup,
    agent, verification; by default from its name): phases after it did not run, except the
    verifier after the exceptions Harbor records and verifies anyway (a reward given).
    """
    trial_dir = job_dir / trial_name
    paths = TrialPaths(trial_dir)
    paths.mkdir()  # agent/, verifier/, artifacts/, as Harbor makes them
    task_path = Path(tasks_dir or "/tasks") / scenario_id
    config = TrialConfig(task=TaskConfig(path=task_path), trial_name=trial_name,
                         trials_dir=job_dir, agent=AgentConfig(import_path=agent_import_path))
    paths.config_path.write_text(config.model_dump_json(indent=4))
    lines = [r if isinstance(r, str) else r.model_dump_json() for r in records]
    text = "".join(line + "\n" for line in lines) + (truncated_tail or "")
    if text:
        (paths.agent_dir / LLM_CALLS_FILE).write_text(text)
    if agent_status is not None:
        (paths.agent_dir / AGENT_STATUS_FILE).write_text(json.dumps(agent_status))
    if tsq_details is not None:
        (paths.verifier_dir / TSQ_DETAILS_FILE).write_text(json.dumps(tsq_details))
    if rewards is not None:
        paths.reward_json_path.write_text(json.dumps(rewards))
    if running:
        return trial_dir
    phases: list[TimingInfo | None] = []
    t = started_at
    for seconds in phase_s:
        phases.append(TimingInfo(started_at=t, finished_at=t + timedelta(seconds=seconds)))
        t += timedelta(seconds=seconds)
    exception = None
    if exception_type:
        phase = failed_in or _phase_of(exception_type)
        ran = {"environment": 1, "agent_setup": 2, "agent": 3, "verification": 4}[phase]
        if phase == "agent" and rewards is not None:
            ran = 4  # recorded in the agent phase, verified anyway (a timeout, an exit code)
        phases[ran:] = [None] * (4 - ran)
        happened = phases[{"verification": 3}.get(phase, min(ran, 3) - 1)]
        assert happened is not None and happened.finished_at is not None
        at = happened.finished_at - timedelta(milliseconds=1)
        t = max(p.finished_at for p in phases if p is not None and p.finished_at)
        exception = ExceptionInfo(exception_type=exception_type,
                                  exception_message=f"{exception_type} happened",
                                  exception_traceback="Traceback …", occurred_at=at)
        paths.exception_message_path.write_text(
            f"Traceback (most recent call last):\n{exception_type}: {exception_type} happened\n")
    result = TrialResult(
        task_name=scenario_id, trial_name=trial_name, trial_uri=trial_dir.as_uri(),
        task_id=LocalTaskId(path=task_path), task_checksum="0", config=config,
        agent_info=AgentInfo(name="banking-agent", version="0"),
        verifier_result=VerifierResult(rewards=rewards) if rewards is not None else None,
        agent_result=_reported(agent_status),
        exception_info=exception, started_at=started_at, finished_at=t,
        environment_setup=phases[0], agent_setup=phases[1], agent_execution=phases[2],
        verifier=phases[3],
    )
    paths.result_path.write_text(result.model_dump_json(indent=4))
    return trial_dir


def _phase_of(exception_type: str) -> str:
    """Where Harbor raises an exception of this name: the environment's start and the
    verifier's own failures where they happen, everything else while the agent runs."""
    cause = policy_for(exception_type).cause
    if exception_type in ("AddTestsDirError", "DownloadVerifierDirError") or \
            cause == FailureCause.VERIFIER_FAILED:
        return "verification"
    if cause == FailureCause.SANDBOX_FAILED:
        return "environment"
    return "agent"


def _reported(agent_status: dict[str, Any] | None) -> AgentContext | None:
    """What the agent reports to Harbor in process beside agent_status.json (as
    agents/episode.py does): the status analysis trusts once a trial has a result."""
    if agent_status is None:
        return None
    return AgentContext(metadata={
        "status": agent_status.get("status"), "status_reason": agent_status.get("reason"),
        **{k: agent_status[k] for k in ("attempts", "accepted_attempt", "llm_calls")
           if k in agent_status}})


def write_task_stub(tasks_dir: Path, scenario_id: str, *, labels: str = "match@1",
                    mode: InstructionMode = DEFAULT_MODE, dataset_revision: str = "sample-1",
                    dataset: str = DATASET_ID,
                    label_quality: dict[str, Any] | None = None) -> Path:
    """The provenance-bearing files of a task folder: task.toml `[metadata]` (through the
    builder's contract) and tests/expected.json (with `labels.quality` when given). No
    environment: not runnable."""
    task = tasks_dir / scenario_id
    expected_path(task).parent.mkdir(parents=True, exist_ok=True)
    method, _, version = labels.partition("@")
    meta = TaskMetadata(scenario_id=scenario_id, domain=scenario_id.rsplit("-", 1)[0],
                        persona_index=0, n_goals=0, labels=labels,
                        dataset_revision=dataset_revision, mode=mode, dataset=dataset)
    (task / TASK_TOML).write_text("\n".join([*metadata_toml(meta), ""]))
    expected = Expected(
        scenario_id=scenario_id, expected_tools=[], goals=[],
        labels=LabelsInfo(method=method, version=version, quality=label_quality),
        provenance=Provenance(dataset_revision=dataset_revision, builder="synthetic"))
    expected_path(task).write_text(expected.model_dump_json())
    return task


def write_sweep_manifest(sweep_dir: Path, levels: list[int], **overrides: Any) -> Path:
    sweep_dir.mkdir(parents=True, exist_ok=True)
    fields: dict[str, Any] = dict(
        name=sweep_dir.name, config=SweepConfig(levels=levels, profile="cpu-mocker"),
        fingerprint="synthetic", levels=levels, attempts=1,
        server_profile="cpu-mocker", base_url="http://127.0.0.1:0/v1", model="synthetic-model",
        router="round-robin", tasks_dir="/tasks", n_tasks=0,
        versions={"harbor": "0.25", "bankbench": "0.1.0"}, git_sha="0" * 40,
        started_at=T0, finished_at=T0 + timedelta(hours=1),
        level_records=[LevelRecord(level=lv, job_dir=level_dir_name(lv), state="complete")
                       for lv in levels],
    )
    fields.update(overrides)
    (sweep_dir / SWEEP_FILE).write_text(SweepManifest(**fields).model_dump_json(indent=2))
    return sweep_dir


def synthetic_sweep(sweep_dir: Path, levels: list[int], trials_per_level: int,
                    requests_per_trial: int, itl_per_request: int = 20, seed: int = 0) -> Path:
    """A plausible sweep: latency grows with concurrency, TSQ drifts down a little."""
    rng = random.Random(seed)
    write_sweep_manifest(sweep_dir, levels)
    for level in levels:
        job_dir = write_job(level_dir(sweep_dir, level), level, n_total_trials=trials_per_level)
        slot_clock = [0.0] * level  # seconds; trials run `level` at a time
        for i in range(trials_per_level):
            slot = i % level
            start_s = slot_clock[slot]
            scenario = f"banking-{i % 100:03d}"
            name = f"{scenario}__{level:03d}{i:05d}"
            records, t_ns = [], _T0_NS + int(start_s * 1e9)
            for step in range(requests_per_trial):
                ttft = rng.uniform(20, 40) * (1 + level / 8)
                gaps = [rng.uniform(4, 8) * (1 + level / 16) for _ in range(itl_per_request)]
                e2e = ttft + sum(gaps)
                records.append(record(
                    request_id=f"{name}-{step}", trial_name=name, scenario_id=scenario,
                    attempt=1 if step < requests_per_trial - 1 else 2, step=step,
                    role="agent" if step % 4 else "evaluator", start_unix_ns=t_ns,
                    **raw_times(ttft, gaps, e2e, send_ns=t_ns), prompt_tokens=1500 + 100 * step,
                    completion_tokens=itl_per_request + 1, cached_tokens=1200 + 100 * step))
                t_ns += int(e2e * 1e6) + 1_000_000
            agent_s = (t_ns - _T0_NS) / 1e9 - start_s
            slot_clock[slot] = start_s + agent_s + 0.1 + 0.01  # agent run + verifier
            tsq = max(0.0, min(1.0, rng.gauss(0.8 - level / 200, 0.15)))
            write_trial(job_dir, name, scenario_id=scenario, records=records,
                        rewards={"tsq": tsq, "precision": tsq, "recall": tsq,
                                 "param_validity": 1.0, "multiset_f1": tsq, "goal_coverage": tsq},
                        agent_status={"status": "ok", "reason": None},
                        tsq_details={"attempts": [{"attempt": 1, "tsq": tsq * 0.9},
                                                  {"attempt": 2, "tsq": tsq}],
                                     "scored_attempt": 2},
                        started_at=T0 + timedelta(seconds=start_s), phase_s=(0, 0, agent_s, 0.1))
    return sweep_dir


def conversation_sweep(sweep_dir: Path, levels: list[int], *, scenarios: int = 4,
                       turns: int = 3, mode: str = "conversation", router: str = "kv",
                       cached_share: float = 0.8, simulator: bool = True,
                       seed: int = 0, customer: str | None = "scripted customer.py "
                       "sha256:000000000000") -> Path:
    """A sweep of conversation-mode (or, with `mode="goals"`, single-turn) trials over
    `scenarios` task stubs in `<sweep>/tasks`: per turn two agent calls whose prompt grows with
    the conversation, of which a turn after the first finds `cached_share` of the previous
    turn's prompt in the cache; per customer reply one `user_simulator` call (slow and large,
    so a figure that let it in would show it); reward.json with `turns`."""
    rng = random.Random(seed)
    tasks_dir = sweep_dir / "tasks"
    ids = [f"banking-{i:03d}" for i in range(scenarios)]
    for scenario in ids:
        write_task_stub(tasks_dir, scenario, mode=mode)
    write_sweep_manifest(sweep_dir, levels, router=router, tasks_dir=str(tasks_dir),
                         n_tasks=scenarios, config=SweepConfig(
                             levels=levels, profile="cpu-mocker", router=router, mode=mode))
    n_turns = turns if mode == "conversation" else 1
    for level in levels:
        job_dir = write_job(level_dir(sweep_dir, level), level, n_total_trials=scenarios)
        for scenario in ids:
            name = f"{scenario}__c{level}"
            records, t_ns, prompt = [], _T0_NS, 0
            for turn in range(n_turns):
                if turn and simulator:
                    records.append(record(
                        role="user_simulator",
                        request_id=f"{name}-u{turn}", trial_name=name, scenario_id=scenario,
                        turn=turn, step=0, start_unix_ns=t_ns, prompt_tokens=5000,
                        completion_tokens=40, cached_tokens=0,
                        **raw_times(900.0, [10.0] * 39, 1500.0, send_ns=t_ns)))
                    t_ns += 1_500_000_000
                for step in (1, 2):
                    # The prompt re-sent from the previous call is the reusable prefix.
                    previous, prompt = prompt, 800 + 300 * turn + 100 * step
                    cached = round(cached_share * previous) if turn or step == 2 else 0
                    ttft = 20.0 + 0.02 * (prompt - cached) * (1 + level / 8)
                    ttft *= rng.uniform(0.9, 1.1)
                    records.append(record(
                        request_id=f"{name}-{turn}-{step}", trial_name=name,
                        scenario_id=scenario, turn=turn, step=step, start_unix_ns=t_ns,
                        **raw_times(ttft, [5.0] * 9, ttft + 45.0, send_ns=t_ns),
                        prompt_tokens=prompt, completion_tokens=10, cached_tokens=cached))
                    t_ns += int((ttft + 45.0) * 1e6) + 1_000_000
            agent_s = (t_ns - _T0_NS) / 1e9 + 0.5
            tsq = 0.9 if mode == "goals" else 0.7
            write_trial(job_dir, name, scenario_id=scenario, records=records,
                        rewards={"tsq": tsq, "precision": tsq, "recall": tsq,
                                 "param_validity": 1.0, "multiset_f1": tsq,
                                 "goal_coverage": tsq, "turns": float(n_turns)},
                        agent_status={"status": "ok", "reason": None}, tasks_dir=tasks_dir,
                        phase_s=(0, 0, agent_s, 0.1), tsq_details=None if n_turns == 1 else {
                            "scored_attempt": 1, "attempts": [
                                {"attempt": 1, "reward": {"tsq": tsq}}],
                            "conversation": {"attempt": 1, "turns": n_turns, "ended": True,
                                             "end_reason": "satisfied",
                                             "customer": customer}})
    return sweep_dir
