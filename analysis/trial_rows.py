"""Read trial folders into plain rows, several processes at once.

Reading is the cost of analysis: five small files per trial (100,000 request records are
10,000 trials, 50,000 opens) and their JSON/pydantic parsing, with no single hot spot. Trials
are independent, so large jobs are read in chunks by a process pool; small ones in-process,
where starting workers would cost more than it saves. Every reader stays lenient: a problem
is an `Issue`, and a trial whose reading fails outright (or a worker that dies) costs that
trial or chunk an issue, never the others.

The per-request timing columns come from `analysis.metrics.latency.derive`, run once per
chunk over the raw times `_add_requests` gathers (`Rows.packed`).
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import warnings
from array import array
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from harbor.models.trial.paths import TrialPaths

from analysis import files
from analysis.metrics import integrity, latency
from analysis.request_columns import FLOAT_REQ, INT_REQ, RECORD_COLUMNS, REQ_COLUMNS
from analysis.status import QUALITY_STATUSES, classify, read_facts
from analysis.task_folder import UNKNOWN, find_task_dir, read_task
from analysis.trajectory import read_trajectory, reply_texts
from contracts.bounds import MS_MAX, finite_number
from contracts.conversation import CONVERSATION_FILE
from contracts.llm_calls import LLMCallRecord
from contracts.reward import REWARD_KEYS
from contracts.task import CONVERSATION_MODE, DEFAULT_MODE

# reward.json's count of the agent's `say`s in the scored attempt (1 in single-turn modes): a
# count, not a 0..1 score, so never imputed as 0.
TURNS_KEY = "turns"
# The instruction mode of runs whose tasks predate the mode field (or are gone) and that hold
# no conversation transcript is DEFAULT_MODE: the only mode there was.
# Fewer trials than this are read in-process: a worker pool costs ~0.1 s to start.
PARALLEL_FROM = 200
CHUNK = 250


@dataclass(frozen=True)
class TrialTask:
    trial_dir: Path
    source: str
    job: str
    level: int
    job_finished: bool
    tasks_dir: str | None = None  # the sweep's task folder, where sweep.json names one


@dataclass
class Rows:
    """Rows of several trials. Requests point at their trial's position (`req_trial`); the
    gaps of all requests are one flat array, in request order (`req["n_itl"]` each)."""

    trials: list[dict[str, Any]] = field(default_factory=list)
    req: dict[str, Any] = field(default_factory=lambda: {k: [] for k in REQ_COLUMNS})
    req_trial: Any = field(default_factory=lambda: array("q"))
    # Raw times for `latency.derive`. Typed arrays: millions of reads cost 8 bytes each
    # instead of a Python object each.
    send_ns: list[int | None] = field(default_factory=list)
    end_ns: list[int | None] = field(default_factory=list)
    n_reads: array = field(default_factory=lambda: array("q"))
    read_ns: array = field(default_factory=lambda: array("q"))
    read_tool_chars: array = field(default_factory=lambda: array("q"))
    read_chars: array = field(default_factory=lambda: array("q"))
    itl_values: Any = None  # the gaps in ms (numpy), once packed
    issues: list[tuple[str, files.Issue]] = field(default_factory=list)
    # task folder → its instruction mode, read once per chunk (repeats share the folder).
    task_modes: dict[Path, str] = field(default_factory=dict)

    def packed(self) -> Rows:
        """Timing derived, numeric columns as numpy arrays: a worker's rows cross to the parent
        as buffers."""
        self._derive_timing()
        for key in REQ_COLUMNS:
            if key in FLOAT_REQ:
                self.req[key] = np.array(self.req[key], dtype=float)
            elif key in INT_REQ:
                self.req[key] = np.array(self.req[key], dtype=np.int64)
        self.req_trial = np.frombuffer(self.req_trial, dtype=np.int64)
        return self

    def _derive_timing(self) -> None:
        n = len(self.send_ns)
        per_request = np.frombuffer(self.n_reads, dtype=np.int64)
        reads = latency.Reads(np.repeat(np.arange(n), per_request),
                              *(np.frombuffer(a, dtype=np.int64)
                                for a in (self.read_ns, self.read_tool_chars, self.read_chars)))
        raw = pd.concat([pd.DataFrame({
            "send_ns": pd.array(self.send_ns, dtype="Int64"),
            "end_ns": pd.array(self.end_ns, dtype="Int64"),
            "completion_tokens": pd.array(self.req["completion_tokens"], dtype="Int64"),
            **latency.server_inputs(self.req["server_ttft_ms"], self.req["server_total_ms"]),
        }), latency.read_inputs(reads, n)], axis=1)
        derived = latency.derive(raw)
        for key, values in latency.presented(derived).items():
            self.req[key] = values.to_numpy()
        self.req["n_itl"] = np.maximum(raw["n_reads"].to_numpy(dtype=np.int64) - 1, 0)
        # In integers: a wall-clock ns stamp is past float's exact range.
        end = pd.array(self.req["start_unix_ns"], dtype="Int64") + derived["e2e_ns"].astype(
            "Int64").array
        self.req["end_unix_ns"] = end.to_numpy(dtype=float, na_value=np.nan)
        self.itl_values = latency.ITL.to_display(latency.gaps_ns(reads))
        self.send_ns, self.end_ns = [], []
        self.n_reads, self.read_ns = array("q"), array("q")
        self.read_tool_chars, self.read_chars = array("q"), array("q")


def _merge(parts: list[Rows]) -> Rows:
    out = Rows(trials=[t for p in parts for t in p.trials],
               issues=[i for p in parts for i in p.issues])
    for key in REQ_COLUMNS:
        values = [p.req[key] for p in parts]
        out.req[key] = (np.concatenate(values) if isinstance(values[0], np.ndarray)
                        else [v for chunk in values for v in chunk])
    bases = np.cumsum([0] + [len(p.trials) for p in parts[:-1]])
    out.req_trial = np.concatenate([p.req_trial + base for p, base in
                                    zip(parts, bases, strict=True)])
    out.itl_values = np.concatenate([p.itl_values for p in parts])
    return out


def read_trials(tasks: list[TrialTask]) -> Rows:
    """Rows of every trial, in the order given."""
    if len(tasks) < PARALLEL_FROM or (os.cpu_count() or 1) < 2:
        return _read_chunk(tasks)
    chunks = [tasks[i:i + CHUNK] for i in range(0, len(tasks), CHUNK)]
    try:
        with warnings.catch_warnings(), ProcessPoolExecutor(
                max_workers=min(os.cpu_count() or 2, len(chunks)), mp_context=_context()) as pool:
            # Python warns on fork once threads exist (numpy's idle BLAS pool); the workers
            # run only file reading and parsing, and take no lock those threads could hold.
            warnings.filterwarnings("ignore", "This process .* is multi-threaded",
                                    DeprecationWarning)
            parts = list(pool.map(_read_chunk, chunks))
    except (BrokenProcessPool, OSError) as exc:  # a worker died: read here instead
        print(f"analysis: parallel reading failed ({exc}); reading in one process",
              file=sys.stderr)
        parts = [_read_chunk(chunk) for chunk in chunks]
    return _merge(parts)


def _context() -> multiprocessing.context.BaseContext:
    # fork: a worker starts as a copy of this process, no re-import of pandas and no re-run
    # of the caller's script (forkserver and spawn re-import `__main__`, which breaks a
    # script without a main guard). Elsewhere the platform's default.
    if "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()


def _read_chunk(tasks: list[TrialTask]) -> Rows:
    rows = Rows()
    for task in tasks:
        issues: list[files.Issue] = []
        before = len(rows.trials)
        try:
            _read_trial(task, rows, issues)
        except Exception as exc:  # a reader bug must not cost the other trials, nor this one
            issues.append(files.Issue(str(task.trial_dir), f"trial not read: {exc!r}"))
            if len(rows.trials) == before:
                rows.trials.append(_unread_row(task, repr(exc)))
        rows.issues += [(task.source, i) for i in issues]
    return rows.packed()


def _read_trial(task: TrialTask, rows: Rows, issues: list[files.Issue]) -> None:
    """The trial's row, its status first (read once, `analysis.status`); then what else it
    holds, each part on its own: a part that cannot be read costs that part, never the row."""
    trial_dir = task.trial_dir
    read = read_facts(trial_dir, issues, task.job_finished)
    status, reason = classify(read.facts)
    result, rewards, agent_status = read.result, read.rewards, read.agent
    calls = files.read_llm_calls(trial_dir, issues)
    records = calls.records
    task_name = result.task_name if result else _task_name_from_config(trial_dir, issues)
    scenario = task_name or (records[0].scenario_id if records else trial_dir.name.split("__")[0])
    row = _base_row(task, scenario, status, reason)
    row.update(exception_type=read.facts.exception_type,
               agent_status=agent_status.status if agent_status else None)
    imputed = status == "agent_failed" and not rewards
    for key in REWARD_KEYS:
        value = (rewards or {}).get(key)
        row[key] = 0.0 if imputed else (float(value) if value is not None else np.nan)
    if imputed:
        row[TURNS_KEY] = np.nan  # a count: unknown without the verifier, not 0
    row["reward_imputed"] = imputed
    row["requests_unreadable"] = calls.unreadable
    rows.trials.append(row)
    try:
        # The task folder, found once here; every post-pass takes it from `Tables.task_dirs`.
        task_dir = find_task_dir(trial_dir, scenario, task.tasks_dir)
        row["task_dir"] = str(task_dir) if task_dir is not None else None
        row["mode"] = _trial_mode(trial_dir, task_dir, records, rows.task_modes)
        attempts = files.read_attempt_scores(trial_dir, issues)
        row.update(_attempt_columns(attempts, records, row["tsq"],
                                    agent_status.attempts if agent_status else None))
        row["end_reason"] = attempts.end_reason if attempts else None
        row["customer"] = attempts.customer if attempts else None
        row.update(_timing_columns(result))
        replies = _integrity_inputs(trial_dir, records, issues)
    except Exception as exc:  # a reader bug: the row keeps its status and rewards
        issues.append(files.Issue(str(trial_dir), f"trial read in part: {exc!r}"))
        replies = None
    row["requests_unreadable"] += _add_requests(len(rows.trials) - 1, records, rows, replies,
                                                issues)


def _base_row(task: TrialTask, scenario: str, status: str, reason: str) -> dict[str, Any]:
    return {"source": task.source, "job": task.job, "level": task.level,
            "trial": task.trial_dir.name, "scenario_id": scenario, "status": status,
            "status_reason": reason, "in_quality": status in QUALITY_STATUSES}


def _unread_row(task: TrialTask, why: str) -> dict[str, Any]:
    """A trial whose facts could not be read at all: in the table and the counts, out of the
    quality figures, saying why (never silently gone)."""
    row = _base_row(task, task.trial_dir.name.split("__")[0], "harness_failed",
                    f"not read: {why}")
    row.update({key: np.nan for key in REWARD_KEYS}, reward_imputed=False,
               requests_unreadable=0)
    return row


def _trial_mode(trial_dir: Path, task_dir: Path | None, records: list[LLMCallRecord],
                cache: dict[Path, str]) -> str:
    """The instruction mode of the trial's task (task.toml `[metadata] mode`); for a task that
    is gone or predates the field: conversation when the trial holds a transcript or calls
    past turn 0, else goals."""
    if task_dir is not None and task_dir not in cache:
        found = read_task(task_dir)
        cache[task_dir] = found.mode if found is not None else UNKNOWN
    mode = cache[task_dir] if task_dir is not None else UNKNOWN
    if mode != UNKNOWN:
        return mode
    transcript = TrialPaths(trial_dir).agent_dir / CONVERSATION_FILE
    if transcript.exists() or any(r.turn for r in records):
        return CONVERSATION_MODE
    return DEFAULT_MODE


def _task_name_from_config(trial_dir: Path, issues: list[files.Issue]) -> str | None:
    config = files.read_trial_config(trial_dir, issues)
    path = config.task.path if config and config.task else None
    return Path(path).name if path else None


def _attempt_columns(attempts: files.AttemptScores | None, records: list[LLMCallRecord],
                     tsq: float, reported: int | None) -> dict[str, Any]:
    by_attempt = attempts.by_attempt if attempts else {}
    max_called = max((r.attempt for r in records), default=0)
    # Whichever source saw most: the verifier lists attempts with bank calls, the call log
    # attempts that reached the LLM, the agent its own count.
    n_attempts = max(len(by_attempt), max(by_attempt, default=0), max_called, reported or 0)
    scored = attempts.scored_attempt if attempts else None
    # The verifier lists only attempts that made bank calls: a missing attempt 1 scored 0.
    first = by_attempt.get(1, 0.0) if by_attempt else tsq
    return {
        "n_attempts": n_attempts or np.nan,
        "scored_attempt": scored if scored is not None else np.nan,
        "tsq_first_attempt": first,
        "tsq_scored_attempt": by_attempt.get(scored, tsq) if scored is not None else tsq,
    }


def _timing_columns(result: files.TrialResultView | None) -> dict[str, Any]:
    def secs(phase: files.PhaseTiming | None) -> float:
        value = phase.seconds() if phase else None
        return np.nan if value is None else value

    env = secs(result.environment_setup) if result else np.nan
    agent_setup = secs(result.agent_setup) if result else np.nan
    total = np.nan
    if result and result.started_at and result.finished_at:
        total = (result.finished_at - result.started_at).total_seconds()
    ctx = result.agent_result if result else None
    return {
        "started_at": result.started_at if result else None,
        "finished_at": result.finished_at if result else None,
        "env_setup_s": env, "agent_setup_s": agent_setup,
        "setup_s": np.nansum([env, agent_setup]) if not (np.isnan(env) and np.isnan(agent_setup))
        else np.nan,
        "agent_s": secs(result.agent_execution) if result else np.nan,
        "verifier_s": secs(result.verifier) if result else np.nan,
        "total_s": total,
        "harbor_input_tokens": ctx.n_input_tokens if ctx else None,
        "harbor_output_tokens": ctx.n_output_tokens if ctx else None,
    }


@dataclass
class _Replies:
    """What the integrity classes read from the trajectory: each reply's text by request id,
    and the schemas of the tools the agent sent (None: not recorded)."""

    texts: dict[str, str] = field(default_factory=dict)
    tools: dict[str, dict[str, Any]] | None = None


def _integrity_inputs(trial_dir: Path, records: list[LLMCallRecord],
                      issues: list[files.Issue]) -> _Replies:
    # The trajectory is read only for trials with classified replies (not text mode, not
    # records from before tool_stream).
    if not any(r.tool_stream is not None and r.tool_stream.offered for r in records):
        return _Replies()
    texts, tools = reply_texts(read_trajectory(trial_dir, issues))
    return _Replies(texts, None if tools is None else integrity.tool_schemas(tools))


def _classes(rec: LLMCallRecord, replies: _Replies) -> dict[str, float] | None:
    """The integrity classes of one request, None when it is not classified (failed, or no
    tools offered)."""
    ok = rec.error is None and rec.end_ns is not None and (
        rec.http_status is None or 200 <= rec.http_status < 300)
    if not integrity.is_classified(rec.tool_stream, ok):
        return None
    assert rec.tool_stream is not None
    return integrity.classify(rec.tool_stream, rec.finish_reason,
                              replies.texts.get(rec.request_id), replies.tools,
                              reasoning=bool(rec.read_reasoning_chars))


def _add_requests(trial_index: int, records: list[LLMCallRecord], rows: Rows,
                  replies: _Replies | None, issues: list[files.Issue]) -> int:
    """The requests' rows; returns how many records could not be made one."""
    req = rows.req
    replies = replies or _Replies()
    # Bound appends: this loop runs once per request (100,000s), so it stays plain. Each
    # record's values are all computed before any is appended: the columns stay aligned, and a
    # record that cannot be turned into a row is counted unreadable, the others kept.
    append = [req[column.name].append for column in RECORD_COLUMNS]
    unreadable = 0
    for rec in records:
        try:
            values = _request_values(rec, replies)
        except Exception as exc:  # an agent-written record no reader foresaw
            unreadable += 1
            issues.append(files.Issue(str(rows.trials[trial_index].get("trial")),
                                      f"request {rec.request_id!r} not read: {exc!r}"))
            continue
        for add, value in zip(append, values, strict=True):
            add(value)
        rows.req_trial.append(trial_index)
        # Raw times only; `latency.derive` turns them into every timing column per chunk.
        rows.send_ns.append(rec.send_ns)
        rows.end_ns.append(rec.end_ns)
        rows.n_reads.append(len(rec.read_ns))
        rows.read_ns.extend(rec.read_ns)
        rows.read_tool_chars.extend(latency.aligned_tool_chars(rec))
        rows.read_chars.extend(latency.aligned_chars(rec))
    return unreadable


def _request_values(rec: LLMCallRecord, replies: _Replies) -> tuple[Any, ...]:
    """One request's column values, in `RECORD_COLUMNS` order."""
    server = rec.server or {}
    worker = server.get("worker_id")
    if isinstance(worker, dict):  # disaggregated serving names prefill and decode workers
        worker = worker.get("decode_worker_id", worker.get("worker_id", worker))
    # Records written before raw times carry no read sizes: unknown, not 0.
    sizes = (sum(rec.read_content_chars), sum(rec.read_reasoning_chars),
             sum(rec.read_tool_call_chars)) if rec.sizes_known else (None, None, None)
    timing = server.get("timing") if isinstance(server.get("timing"), dict) else {}
    received = finite_number(timing.get("request_received_ms"))
    classes = _classes(rec, replies)
    read = {
        "worker_id": None if worker is None else str(worker)[:200],
        "content_chars": sizes[0], "reasoning_chars": sizes[1], "tool_call_chars": sizes[2],
        "error_type": rec.error.type if rec.error else None,
        "server_ttft_ms": finite_number(timing.get("ttft_ms"), MS_MAX),
        "server_total_ms": finite_number(timing.get("total_time_ms"), MS_MAX),
        # Both stamps are wall clock; meaningful when client and server share a host.
        "send_to_received_ms": None if received is None else received - rec.start_unix_ns / 1e6,
        **{key: np.nan if classes is None else classes[key] for key in integrity.COLUMNS},
    }
    return tuple(getattr(rec, c.name) if c.source == "record" else read[c.name]
                 for c in RECORD_COLUMNS)
