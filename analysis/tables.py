"""The one place that flattens job and sweep directories into DataFrames.

`load(path)` accepts a Harbor job directory or a sweep directory (`sweep.json` + `c<level>/`
jobs) and returns `Tables`:

- `trials`: one row per trial folder, running and failed ones included (see `status`).
- `requests`: one row per LLM call, joined to its trial and level.
- `itl`: one row per inter-chunk gap (`request_row` = row number in `requests`), so pooled
  ITL percentiles need no per-row lists.
- `jobs`: one row per Harbor job (level, configured concurrency, trial counts).
- `issues`: every input problem met (file, line, message); nothing is dropped silently.

Column meanings are listed in docs/analysis.md.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis import files
from analysis.status import QUALITY_STATUSES, classify
from contracts.llm_calls import LLMCallRecord
from contracts.reward import REWARD_KEYS
from contracts.sweep import (
    METRICS_AFTER,
    METRICS_BEFORE,
    SWEEP_FILE,
    SweepManifest,
    level_dir,
    level_of_dir,
)


class AnalysisInputError(ValueError):
    """The path given is not something analysis can read (one line, names the path)."""


@dataclass
class Tables:
    trials: pd.DataFrame
    requests: pd.DataFrame
    itl: pd.DataFrame
    jobs: pd.DataFrame
    issues: pd.DataFrame
    sweeps: dict[str, SweepManifest] = field(default_factory=dict)

    @property
    def sources(self) -> list[str]:
        return list(dict.fromkeys(self.jobs["source"])) if len(self.jobs) else []


@dataclass
class _Sink:
    """Accumulates rows while reading; turned into DataFrames once at the end."""

    trials: list[dict[str, Any]] = field(default_factory=list)
    req: dict[str, list[Any]] = field(default_factory=lambda: {k: [] for k in _REQ_COLUMNS})
    req_trial: list[int] = field(default_factory=list)
    # Typed arrays: millions of gaps cost 8 bytes each instead of a Python object each.
    itl_values: array = field(default_factory=lambda: array("d"))
    itl_rows: array = field(default_factory=lambda: array("q"))
    jobs: list[dict[str, Any]] = field(default_factory=list)
    issues: list[tuple[str, files.Issue]] = field(default_factory=list)
    sweeps: dict[str, SweepManifest] = field(default_factory=dict)


_REQ_COLUMNS = (
    "request_id", "role", "attempt", "step", "model", "session_id", "worker_id",
    "start_unix_ns", "ttft_ms", "e2e_ms", "n_itl", "itl_mean_ms", "prompt_tokens",
    "completion_tokens", "cached_tokens", "finish_reason", "http_status", "retries", "error_type",
    "server_ttft_ms", "server_total_ms", "send_to_received_ms",
)


def load(path: Path | str, label: str | None = None) -> Tables:
    """Read one job or sweep directory into `Tables` (`source` column = label or dir name)."""
    return load_many([Path(path)], [label] if label else None)


def load_many(paths: list[Path], labels: list[str] | None = None) -> Tables:
    """Read several jobs/sweeps side by side; each gets a distinct `source` label."""
    sink = _Sink()
    used: set[str] = set()
    for i, path in enumerate(paths):
        path = Path(path)
        base = labels[i] if labels else path.resolve().name
        label, n = base, 2
        while label in used:
            label, n = f"{base}#{n}", n + 1
        used.add(label)
        _read_root(path, label, sink)
    return _build(sink)


def is_sweep_dir(path: Path) -> bool:
    """A sweep directory holds sweep.json or one `c<level>/` job folder per level."""
    path = Path(path)
    if (path / SWEEP_FILE).exists():
        return True
    return path.is_dir() and any(d.is_dir() and level_of_dir(d.name) is not None
                                 for d in path.iterdir())


def _read_root(path: Path, source: str, sink: _Sink) -> None:
    if not path.is_dir():
        raise AnalysisInputError(f"{path}: no such directory (expected a Harbor job or sweep)")
    level_dirs = sorted(
        ((level, d) for d in path.iterdir()
         if d.is_dir() and (level := level_of_dir(d.name)) is not None),
    )
    if (path / SWEEP_FILE).exists() or level_dirs:
        issues: list[files.Issue] = []
        manifest = files.read_sweep_manifest(path, issues)
        if manifest is None and not issues:
            issues.append(files.Issue(str(path / SWEEP_FILE), "missing; levels taken from c<N>/"))
        sink.issues.extend((source, i) for i in issues)
        if manifest is not None:
            sink.sweeps[source] = manifest
            for level in manifest.levels:
                if level not in {lv for lv, _ in level_dirs}:
                    sink.issues.append((source, files.Issue(
                        str(level_dir(path, level)), "level listed in sweep.json has no job yet")))
        for level, job_dir in level_dirs:
            _read_job(job_dir, source, level, sink)
        return
    if (path / "config.json").exists() or any(
        (d / "config.json").exists() for d in path.iterdir() if d.is_dir()
    ):
        _read_job(path, source, None, sink)
        return
    raise AnalysisInputError(
        f"{path}: not a Harbor job (no config.json) nor a sweep (no sweep.json or c<level>/)"
    )


def _read_job(job_dir: Path, source: str, level: int | None, sink: _Sink) -> None:
    issues: list[files.Issue] = []
    config = files.read_json_dict(job_dir / "config.json", issues)
    result = files.read_json_dict(job_dir / "result.json", issues)
    configured = config.get("n_concurrent_trials")
    if level is None:
        if isinstance(configured, int):
            level = configured
        else:
            level = 0
            issues.append(files.Issue(str(job_dir / "config.json"),
                                      "no n_concurrent_trials: level shown as 0 (unknown)"))
    job_finished = result.get("finished_at") is not None
    n_before = len(sink.trials)
    for trial_dir in sorted(d for d in job_dir.iterdir() if d.is_dir()):
        if (trial_dir / "config.json").exists() or (trial_dir / "result.json").exists():
            _read_trial(trial_dir, source, job_dir.name, level, job_finished, sink, issues)
        elif any((trial_dir / sub).exists() for sub in ("agent", "verifier")):
            issues.append(files.Issue(str(trial_dir), "trial folder without config.json skipped"))
    sink.jobs.append({
        "source": source, "job": job_dir.name, "level": level,
        "configured_concurrency": configured if isinstance(configured, int) else level,
        "n_attempts_configured": config.get("n_attempts"),
        "n_total_trials": result.get("n_total_trials"),
        "n_trial_folders": len(sink.trials) - n_before,
        "finished": job_finished, "path": str(job_dir),
        "metrics_before": _existing(job_dir / METRICS_BEFORE),
        "metrics_after": _existing(job_dir / METRICS_AFTER),
    })
    sink.issues.extend((source, i) for i in issues)


def _existing(path: Path) -> str | None:
    return str(path) if path.is_file() else None


def _read_trial(trial_dir: Path, source: str, job: str, level: int, job_finished: bool,
                sink: _Sink, issues: list[files.Issue]) -> None:
    result = files.read_trial_result(trial_dir, issues)
    agent_status = files.read_agent_status(trial_dir, issues)
    records = files.read_llm_calls(trial_dir, issues)
    attempts = files.read_attempt_scores(trial_dir, issues)
    rewards = result.verifier_result.rewards if result and result.verifier_result else None
    if rewards is None and result is not None:
        rewards = files.read_reward_file(trial_dir, issues)
    exc_type = exc_msg = None
    if result is not None and result.exception_info is not None:
        exc_type = result.exception_info.exception_type
        exc_msg = result.exception_info.exception_message
    elif (last := files.read_exception_txt(trial_dir)) is not None:
        exc_type, _, exc_msg = last.partition(": ")
    status, reason = classify(
        has_result=result is not None, job_finished=job_finished,
        exception_type=exc_type, exception_message=exc_msg,
        agent_status=agent_status.status if agent_status else None,
        agent_reason=agent_status.reason if agent_status else None,
        has_reward=bool(rewards),
    )
    task_name = result.task_name if result else _task_name_from_config(trial_dir, issues)
    scenario = task_name or (records[0].scenario_id if records else trial_dir.name.split("__")[0])
    row: dict[str, Any] = {
        "source": source, "job": job, "level": level, "trial": trial_dir.name,
        "scenario_id": scenario, "status": status, "status_reason": reason,
        "exception_type": exc_type, "agent_status": agent_status.status if agent_status else None,
    }
    imputed = status == "agent_failed" and not rewards
    for key in REWARD_KEYS:
        value = (rewards or {}).get(key)
        row[key] = 0.0 if imputed else (float(value) if value is not None else np.nan)
    row["in_quality"] = status in QUALITY_STATUSES
    row["reward_imputed"] = imputed
    row.update(_attempt_columns(attempts, records, row["tsq"],
                                agent_status.attempts if agent_status else None))
    row.update(_timing_columns(result))
    sink.trials.append(row)
    _add_requests(len(sink.trials) - 1, records, sink)


def _task_name_from_config(trial_dir: Path, issues: list[files.Issue]) -> str | None:
    task = files.read_json_dict(trial_dir / "config.json", issues).get("task") or {}
    path = task.get("path") if isinstance(task, dict) else None
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


def _add_requests(trial_index: int, records: list[LLMCallRecord], sink: _Sink) -> None:
    req = sink.req
    for rec in records:
        row = len(sink.req_trial)
        gaps = rec.itl_ms
        server = rec.server or {}
        worker = server.get("worker_id")
        if isinstance(worker, dict):  # disaggregated serving names prefill and decode workers
            worker = worker.get("decode_worker_id", worker.get("worker_id", worker))
        req["request_id"].append(rec.request_id)
        req["role"].append(rec.role)
        req["attempt"].append(rec.attempt)
        req["step"].append(rec.step)
        req["model"].append(rec.model)
        req["session_id"].append(rec.session_id)
        req["worker_id"].append(None if worker is None else str(worker))
        req["start_unix_ns"].append(rec.start_unix_ns)
        req["ttft_ms"].append(rec.ttft_ms)
        req["e2e_ms"].append(rec.e2e_ms)
        req["n_itl"].append(len(gaps))
        req["itl_mean_ms"].append(sum(gaps) / len(gaps) if gaps else None)
        req["prompt_tokens"].append(rec.prompt_tokens)
        req["completion_tokens"].append(rec.completion_tokens)
        req["cached_tokens"].append(rec.cached_tokens)
        req["finish_reason"].append(rec.finish_reason)
        req["http_status"].append(rec.http_status)
        req["retries"].append(rec.retries)
        req["error_type"].append(rec.error.type if rec.error else None)
        timing = server.get("timing") if isinstance(server.get("timing"), dict) else {}
        req["server_ttft_ms"].append(_number(timing.get("ttft_ms")))
        req["server_total_ms"].append(_number(timing.get("total_time_ms")))
        received = _number(timing.get("request_received_ms"))
        # Both stamps are wall clock; meaningful when client and server share a host (or NTP).
        req["send_to_received_ms"].append(
            None if received is None else received - rec.start_unix_ns / 1e6)
        sink.req_trial.append(trial_index)
        if gaps:
            sink.itl_values.extend(gaps)
            sink.itl_rows.extend(array("q", [row]) * len(gaps))


_FLOAT_REQ = ("ttft_ms", "e2e_ms", "itl_mean_ms", "prompt_tokens", "completion_tokens",
              "cached_tokens", "http_status", "server_ttft_ms", "server_total_ms",
              "send_to_received_ms")


def _number(value: Any) -> float | None:
    """A server-reported figure, if it is a number (servers other than Dynamo send none)."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _build(sink: _Sink) -> Tables:
    trials = pd.DataFrame(sink.trials, columns=_TRIAL_COLUMNS)
    for col in ("started_at", "finished_at"):
        trials[col] = pd.to_datetime(trials[col], utc=True)
    trial_idx = np.asarray(sink.req_trial, dtype=np.int64)
    req = pd.DataFrame({k: pd.Series(v, dtype=float if k in _FLOAT_REQ else None)
                        for k, v in sink.req.items()})
    if len(req) == 0:
        req = pd.DataFrame({k: pd.Series(dtype=float if k in _FLOAT_REQ else object)
                            for k in _REQ_COLUMNS})
    req = _derive_request_columns(req)
    keys = trials.loc[trial_idx, ["source", "job", "level", "trial", "scenario_id", "status"]]
    keys = keys.rename(columns={"status": "trial_status"}).reset_index(drop=True)
    requests = pd.concat([keys, req], axis=1)
    trials = _add_trial_aggregates(trials, requests, trial_idx)
    requests["repeat"] = trials["repeat"].to_numpy()[trial_idx] if len(trials) else []
    itl = pd.DataFrame({"request_row": np.frombuffer(sink.itl_rows, dtype=np.int64).copy(),
                        "itl_ms": np.frombuffer(sink.itl_values, dtype=float).copy()})
    issues = pd.DataFrame(
        [{"source": s, "path": i.path, "line": i.line, "message": i.message}
         for s, i in sink.issues], columns=["source", "path", "line", "message"])
    jobs = pd.DataFrame(sink.jobs, columns=_JOB_COLUMNS)
    return Tables(trials, requests, itl, jobs, issues, sink.sweeps)


def _derive_request_columns(req: pd.DataFrame) -> pd.DataFrame:
    req["start_unix_ns"] = req["start_unix_ns"].astype("int64")
    req["end_unix_ns"] = req["start_unix_ns"] + (req["e2e_ms"] * 1e6).round().astype("Int64")
    http_ok = req["http_status"].isna() | req["http_status"].between(200, 299)
    req["ok"] = req["error_type"].isna() & req["e2e_ms"].notna() & http_ok
    decode_ms = req["e2e_ms"] - req["ttft_ms"]
    # TPOT = decode time per token after the first (vLLM TPOT, aiperf inter_token_latency).
    req["tpot_ms"] = (decode_ms / (req["completion_tokens"] - 1)).where(
        req["completion_tokens"] > 1)
    req["output_tps_per_user"] = 1000.0 / req["tpot_ms"].where(req["tpot_ms"] > 0)
    req["self_eval_extra"] = (req["role"] == "evaluator") | (req["attempt"] > 1)
    return req


def _add_trial_aggregates(trials: pd.DataFrame, requests: pd.DataFrame,
                          trial_idx: np.ndarray) -> pd.DataFrame:
    n = len(trials)

    def total(values: pd.Series, mask: pd.Series | None = None) -> np.ndarray:
        v = values.fillna(0).to_numpy(dtype=float)
        if mask is not None:
            v = v * mask.to_numpy(dtype=float)
        return np.bincount(trial_idx, weights=v, minlength=n)

    def mean(values: pd.Series) -> np.ndarray:
        present = values.notna()
        with np.errstate(invalid="ignore", divide="ignore"):
            return total(values) / np.bincount(trial_idx, weights=present.to_numpy(float),
                                               minlength=n)

    tokens = requests["prompt_tokens"].fillna(0) + requests["completion_tokens"].fillna(0)
    trials["n_requests"] = np.bincount(trial_idx, minlength=n)
    trials["n_failed_requests"] = np.bincount(
        trial_idx, weights=(~requests["ok"]).to_numpy(float), minlength=n).astype(int)
    for col in ("prompt_tokens", "completion_tokens", "cached_tokens"):
        trials[col] = total(requests[col])
    trials["total_tokens"] = trials["prompt_tokens"] + trials["completion_tokens"]
    trials["extra_tokens"] = total(tokens, requests["self_eval_extra"])
    trials["llm_s"] = total(requests["e2e_ms"]) / 1000.0
    trials["extra_llm_s"] = total(requests["e2e_ms"], requests["self_eval_extra"]) / 1000.0
    ok = requests["ok"]
    trials["ttft_ms_mean"] = mean(requests["ttft_ms"].where(ok))
    gap_sum = (requests["itl_mean_ms"] * requests["n_itl"]).where(ok)
    with np.errstate(invalid="ignore", divide="ignore"):
        trials["itl_ms_mean"] = total(gap_sum) / total(requests["n_itl"].astype(float), ok)
    trials["tpot_ms_mean"] = mean(requests["tpot_ms"].where(ok))
    trials["output_tps_per_user_mean"] = mean(requests["output_tps_per_user"].where(ok))
    order = trials.sort_values(["started_at", "trial"], na_position="last").index
    trials.loc[order, "repeat"] = (
        trials.loc[order].groupby(["source", "job", "scenario_id"]).cumcount() + 1)
    trials["repeat"] = trials["repeat"].astype(int) if n else trials["repeat"]
    return trials


_TRIAL_COLUMNS = [
    "source", "job", "level", "trial", "scenario_id", "status", "status_reason",
    "exception_type", "agent_status", *REWARD_KEYS, "in_quality", "reward_imputed",
    "n_attempts", "scored_attempt", "tsq_first_attempt", "tsq_scored_attempt",
    "started_at", "finished_at", "env_setup_s", "agent_setup_s", "setup_s", "agent_s",
    "verifier_s", "total_s", "harbor_input_tokens", "harbor_output_tokens",
]
_JOB_COLUMNS = [
    "source", "job", "level", "configured_concurrency", "n_attempts_configured",
    "n_total_trials", "n_trial_folders", "finished", "path", "metrics_before", "metrics_after",
]
