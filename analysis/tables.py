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

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from harbor.models.trial.paths import TrialPaths

from analysis import files
from analysis.job_paths import JobPaths, is_job_dir, is_trial_dir
from analysis.request_columns import FLOAT_REQ, REQ_COLUMNS
from analysis.trial_rows import TrialTask, read_trials
from contracts.host_load import HOST_LOAD_FILE
from contracts.llm_calls import EVALUATOR_ROLE, MEASURED_ROLES
from contracts.reward import REWARD_KEYS
from contracts.sweep import (
    METRICS_AFTER,
    METRICS_BEFORE,
    SHARD_FILE,
    SWEEP_FILE,
    ShardRecord,
    SweepManifest,
    level_dir,
    level_jobs,
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
    # (source, job, trial) -> the task folder the trial ran, found once when it was read
    # (analysis.task_folder.find_task_dir); None when it is gone.
    task_dirs: dict[tuple[str, str, str], Path | None] = field(default_factory=dict)

    @property
    def sources(self) -> list[str]:
        return list(dict.fromkeys(self.jobs["source"])) if len(self.jobs) else []

    def task_dir(self, trial: Any) -> Path | None:
        """The task folder of a `trials` row, as found when the trial was read."""
        get = trial.get if isinstance(trial, dict) else lambda k: getattr(trial, k)
        return self.task_dirs.get((get("source"), get("job"), get("trial")))


@dataclass
class _Sink:
    """What the directory walk finds: trial folders to read, job rows, job-level issues."""

    tasks: list[TrialTask] = field(default_factory=list)
    jobs: list[dict[str, Any]] = field(default_factory=list)
    issues: list[tuple[str, files.Issue]] = field(default_factory=list)
    sweeps: dict[str, SweepManifest] = field(default_factory=dict)
    router_state: dict[str, Path] = field(default_factory=dict)  # thompson sweeps' server/


def load(path: Path | str, label: str | None = None) -> Tables:
    """Read one job or sweep directory into `Tables` (`source` column = label or dir name)."""
    return load_many([Path(path)], [label] if label else None)


def load_many(paths: list[Path], labels: list[str] | None = None) -> Tables:
    """Read several jobs/sweeps side by side; each gets a distinct `source` label."""
    sink = _Sink()
    for path, label in zip(paths, source_labels(paths, labels), strict=True):
        _read_root(Path(path), label, sink)
    return _build(sink)


def source_labels(paths: list[Path], labels: list[str] | None = None) -> list[str]:
    """The `source` label of each path `load_many` reads: its folder's name (or `labels`),
    `#2`, `#3`... after a name already taken."""
    used: set[str] = set()
    out = []
    for i, path in enumerate(paths):
        base = labels[i] if labels else Path(path).resolve().name
        label, n = base, 2
        while label in used:
            label, n = f"{base}#{n}", n + 1
        used.add(label)
        out.append(label)
    return out


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
            if manifest.router == "thompson" and (path / "server").is_dir():
                sink.router_state[source] = path / "server"
            for level in manifest.levels:
                if level not in {lv for lv, _ in level_dirs}:
                    sink.issues.append((source, files.Issue(
                        str(level_dir(path, level)), "level listed in sweep.json has no job yet")))
        for level, ldir in level_dirs:
            for job_dir in level_jobs(ldir):  # one job, or one per shard (c<level>/s<k>/)
                _read_job(job_dir, source, level, sink, level_path=ldir)
        return
    if is_job_dir(path) or any(is_trial_dir(d) for d in path.iterdir()):
        _read_job(path, source, None, sink)
        return
    raise AnalysisInputError(
        f"{path}: not a Harbor job (no config.json) nor a sweep (no sweep.json or c<level>/)"
    )


def _read_job(job_dir: Path, source: str, level: int | None, sink: _Sink,
              level_path: Path | None = None) -> None:
    """One Harbor job; a shard job is named `c<level>/s<k>` and takes the level folder's
    /metrics scrapes (a level has one pair, whatever ran it)."""
    issues: list[files.Issue] = []
    level_path = level_path or job_dir
    sharded = level_path != job_dir
    name = f"{level_path.name}/{job_dir.name}" if sharded else job_dir.name
    shard = _shard_record(job_dir, issues) if sharded else None
    config = files.read_job_config(job_dir, issues)
    result = files.read_job_result(job_dir, issues)
    # Harbor leaves its default -n (4) out of config.json; a shard's own record says it.
    configured = shard.concurrency if shard else config.n_concurrent_trials
    if level is None:
        if isinstance(configured, int):
            level = configured
        else:
            level = 0
            issues.append(files.Issue(str(JobPaths(job_dir).config_path),
                                      "no n_concurrent_trials: level shown as 0 (unknown)"))
    job_finished = result.finished_at is not None
    manifest = sink.sweeps.get(source)
    tasks_dir = manifest.tasks_dir if manifest is not None else None
    n_before = len(sink.tasks)
    for trial_dir in sorted(d for d in job_dir.iterdir() if d.is_dir()):
        paths = TrialPaths(trial_dir)
        if paths.config_path.exists() or paths.result_path.exists():
            sink.tasks.append(TrialTask(trial_dir, source, name, level, job_finished,
                                        tasks_dir))
        elif paths.agent_dir.exists() or paths.verifier_dir.exists():
            issues.append(files.Issue(str(trial_dir), "trial folder without config.json skipped"))
    sink.jobs.append({
        "source": source, "job": name, "level": level,
        "shard": shard.shard if shard else None, "host": shard.host if shard else None,
        "configured_concurrency": configured if isinstance(configured, int) else level,
        "n_attempts_configured": config.n_attempts,
        "n_total_trials": result.n_total_trials,
        "n_trial_folders": len(sink.tasks) - n_before,
        "finished": job_finished, "path": str(job_dir),
        "metrics_before": _existing(level_path / METRICS_BEFORE),
        "metrics_after": _existing(level_path / METRICS_AFTER),
        "host_load": _existing(level_path / HOST_LOAD_FILE),
    })
    sink.issues.extend((source, i) for i in issues)


def _shard_record(job_dir: Path, issues: list[files.Issue]) -> ShardRecord | None:
    try:
        return ShardRecord.model_validate_json((job_dir / SHARD_FILE).read_text())
    except (OSError, ValueError) as exc:
        issues.append(files.Issue(str(job_dir / SHARD_FILE),
                                  f"shard record unreadable ({exc.__class__.__name__})"))
        return None


def _existing(path: Path) -> str | None:
    return str(path) if path.is_file() else None


def _build(sink: _Sink) -> Tables:
    rows = read_trials(sink.tasks)
    trials = pd.DataFrame(rows.trials, columns=_TRIAL_COLUMNS)
    for col in ("started_at", "finished_at"):
        trials[col] = pd.to_datetime(trials[col], utc=True)
    trial_idx = np.asarray(rows.req_trial, dtype=np.int64)
    req = pd.DataFrame({k: pd.Series(v, dtype=float if k in FLOAT_REQ else None)
                        for k, v in rows.req.items()})
    n_itl = np.asarray(rows.req["n_itl"], dtype=np.int64)
    if len(req) == 0:
        req = pd.DataFrame({k: pd.Series(dtype=float if k in FLOAT_REQ else object)
                            for k in REQ_COLUMNS})
    req = _derive_request_columns(req)
    keys = trials.loc[trial_idx, ["source", "job", "level", "trial", "scenario_id", "status"]]
    keys = keys.rename(columns={"status": "trial_status"}).reset_index(drop=True)
    requests = pd.concat([keys, req], axis=1)
    # A request an interruption (Ctrl-C, a stopped sweep) cut short failed through no fault
    # of the server: counted apart, never in the error rate.
    requests["cancelled"] = ~requests["ok"] & (requests["trial_status"] == "interrupted")
    trials = _add_trial_aggregates(trials, requests, trial_idx)
    requests["repeat"] = trials["repeat"].to_numpy()[trial_idx] if len(trials) else []
    _add_router_decisions(requests, sink.router_state)
    itl = pd.DataFrame({"request_row": np.repeat(np.arange(len(n_itl)), n_itl),
                        "itl_ms": rows.itl_values})
    issues = pd.DataFrame(
        [{"source": s, "path": i.path, "line": i.line, "message": i.message}
         for s, i in [*sink.issues, *rows.issues]],
        columns=["source", "path", "line", "message"])
    jobs = pd.DataFrame(sink.jobs, columns=_JOB_COLUMNS)
    task_dirs = {(t["source"], t["job"], t["trial"]): Path(t["task_dir"])
                 if t.get("task_dir") else None for t in rows.trials}
    return Tables(trials, requests, itl, jobs, issues, sink.sweeps, task_dirs)


def _derive_request_columns(req: pd.DataFrame) -> pd.DataFrame:
    # Timing columns come from analysis.metrics.latency (trial_rows); here only status.
    req["start_unix_ns"] = req["start_unix_ns"].astype("int64")
    req["end_unix_ns"] = req["end_unix_ns"].astype("Int64")
    http_ok = req["http_status"].isna() | req["http_status"].between(200, 299)
    req["ok"] = req["error_type"].isna() & req["e2e_ms"].notna() & http_ok
    req["measured"] = req["role"].isin(MEASURED_ROLES)
    req["self_eval_extra"] = req["measured"] & (
        (req["role"] == EVALUATOR_ROLE) | (req["attempt"] > 1))
    return req


def _add_trial_aggregates(trials: pd.DataFrame, requests: pd.DataFrame,
                          trial_idx: np.ndarray) -> pd.DataFrame:
    n = len(trials)
    # Per-trial figures describe the system under test: the agent's and evaluator's calls.
    # Calls of other roles (a simulated customer …) stay in `requests`, counted apart.
    measured = requests["measured"]
    ok = requests["ok"] & measured

    def count(mask: pd.Series) -> np.ndarray:
        return np.bincount(trial_idx, weights=mask.to_numpy(float), minlength=n)

    def total(values: pd.Series, mask: pd.Series | None = None) -> np.ndarray:
        keep = measured if mask is None else measured & mask
        v = values.fillna(0).to_numpy(dtype=float) * keep.to_numpy(dtype=float)
        return np.bincount(trial_idx, weights=v, minlength=n)

    def tokens_total(values: pd.Series, mask: pd.Series | None = None) -> np.ndarray:
        # A successful call without the server's usage makes the trial's sum unknown (NaN),
        # never a silent undercount.
        keep = ok if mask is None else ok & mask
        return np.where(count(values.isna() & keep) > 0, np.nan, total(values, mask))

    def mean(values: pd.Series) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return total(values.where(ok)) / count(values.notna() & ok)

    tokens = requests["prompt_tokens"] + requests["completion_tokens"]
    trials["n_requests"] = count(measured).astype(int)
    trials["n_failed_requests"] = count(
        ~requests["ok"] & ~requests["cancelled"] & measured).astype(int)
    trials["n_cancelled_requests"] = count(requests["cancelled"] & measured).astype(int)
    trials["n_other_role_requests"] = count(~measured).astype(int)
    # The last customer turn the agent's calls reached (0 in single-turn runs; NaN: no call).
    last = np.full(n, -1.0)
    np.maximum.at(last, trial_idx[measured.to_numpy(bool)],
                  requests.loc[measured, "turn"].to_numpy(dtype=float))
    trials["last_turn"] = np.where(last < 0, np.nan, last)
    for col in ("prompt_tokens", "completion_tokens", "cached_tokens"):
        trials[col] = tokens_total(requests[col])
    trials["total_tokens"] = trials["prompt_tokens"] + trials["completion_tokens"]
    trials["extra_tokens"] = tokens_total(tokens, requests["self_eval_extra"])
    trials["llm_s"] = total(requests["e2e_ms"]) / 1000.0
    trials["extra_llm_s"] = total(requests["e2e_ms"], requests["self_eval_extra"]) / 1000.0
    trials["ttft_ms_mean"] = mean(requests["ttft_ms"])
    gap_sum = (requests["itl_mean_ms"] * requests["n_itl"]).where(ok)
    with np.errstate(invalid="ignore", divide="ignore"):
        trials["itl_ms_mean"] = total(gap_sum) / total(requests["n_itl"].astype(float), ok)
    trials["tpot_ms_mean"] = mean(requests["tpot_ms"])
    trials["output_tps_per_user_mean"] = mean(requests["output_tps_per_user"])
    order = trials.sort_values(["started_at", "trial"], na_position="last").index
    # Per level, not per job: a level's extra passes (c<level>.p<n>) add repeats to it.
    trials.loc[order, "repeat"] = (
        trials.loc[order].groupby(["source", "level", "scenario_id"], dropna=False)
        .cumcount() + 1)
    trials["repeat"] = trials["repeat"].astype(int) if n else trials["repeat"]
    return trials


_TRIAL_COLUMNS = [
    "source", "job", "level", "trial", "scenario_id", "status", "status_reason",
    "exception_type", "agent_status", "mode", *REWARD_KEYS, "end_reason", "customer",
    "in_quality", "reward_imputed", "requests_unreadable",
    "n_attempts", "scored_attempt", "tsq_first_attempt", "tsq_scored_attempt",
    "started_at", "finished_at", "env_setup_s", "agent_setup_s", "setup_s", "agent_s",
    "verifier_s", "total_s", "harbor_input_tokens", "harbor_output_tokens",
]
_JOB_COLUMNS = [
    "source", "job", "level", "configured_concurrency", "n_attempts_configured",
    "n_total_trials", "n_trial_folders", "finished", "path", "metrics_before", "metrics_after",
    "shard", "host", "host_load",
]


def _add_router_decisions(requests: pd.DataFrame, router_state: dict[str, Path]) -> None:
    """`router_worker` and `router_reason` on each call a thompson router routed (which worker,
    why); empty for other routers, which keep no decision record. Dynamo's worker ids are
    unsigned 64-bit (real ones pass 2**63), hence UInt64."""
    requests["router_worker"] = pd.Series(pd.NA, index=requests.index, dtype="UInt64")
    requests["router_reason"] = pd.Series(pd.NA, index=requests.index, dtype=object)
    for source, state_dir in router_state.items():
        from analysis.router_decisions import read_decisions

        decisions = read_decisions(state_dir)
        if decisions.empty:
            continue
        decisions = decisions.dropna(subset=["request_id"]).drop_duplicates("request_id")
        by_id = decisions.set_index("request_id")
        rows = (requests["source"] == source) & requests["request_id"].isin(by_id.index)
        ids = requests.loc[rows, "request_id"]
        requests.loc[rows, "router_worker"] = by_id.loc[ids, "worker"].to_numpy()
        requests.loc[rows, "router_reason"] = by_id.loc[ids, "reason"].to_numpy()
