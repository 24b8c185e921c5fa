"""`running_summary(job_dir)`: a cheap look at a job that is still running, for sweep polling.

Reads only each trial's status facts (`analysis.status.read_facts`: result.json, the reward,
the project's agent's report) and its llm_calls.jsonl lines (TTFT by the tables' own
derivation, `latency.timings`), so it can run between polls of a large job.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harbor.models.trial.paths import TrialPaths

from analysis import files
from analysis.metrics import latency
from analysis.status import QUALITY_STATUSES, classify, read_facts
from contracts.llm_calls import MEASURED_ROLES
from contracts.sweep import level_jobs


def _ttfts(trial_dir: Path) -> list[float]:
    records = [r for r in files.read_llm_calls(trial_dir, []).records
               if r.role in MEASURED_ROLES]  # not a simulated customer's call
    return latency.timings(records)[latency.TTFT.metric.key].dropna().tolist()


def running_summary(job_dir: Path) -> dict[str, Any]:
    """Trials done / running, failures by class, running mean TSQ (over the trials quality
    counts: an infra failure is not a TSQ of 0; `trials_excluded` are the finished ones it
    leaves out) and TTFT of one Harbor job directory (or of a sharded level folder: all its
    shard jobs). Each trial's status is the tables' own (`analysis.status`)."""
    jobs = level_jobs(Path(job_dir))
    issues: list[files.Issue] = []
    totals = [files.read_job_result(j, issues).n_total_trials for j in jobs]
    total = sum(totals) if totals and all(isinstance(t, int) for t in totals) else None
    done = running = errored = 0
    failed: dict[str, int] = {}
    tsq: list[float] = []
    ttft: list[float] = []
    for trial_dir in (d for j in jobs for d in j.iterdir() if d.is_dir()):
        if not TrialPaths(trial_dir).config_path.exists():
            continue
        ttft += _ttfts(trial_dir)
        if not TrialPaths(trial_dir).result_path.exists():
            running += 1
            continue
        done += 1
        read = read_facts(trial_dir, issues)
        if read.result is None or read.result.exception_info is not None:
            errored += 1
        status, _ = classify(read.facts)
        if status != "scored":
            failed[status] = failed.get(status, 0) + 1
        if status not in QUALITY_STATUSES:
            continue
        value = (read.rewards or {}).get("tsq")
        if value is not None:
            tsq.append(float(value))
        elif status == "agent_failed":
            tsq.append(0.0)  # the tables' rule: an agent failure without a reward scores 0
    return {
        "trials_total": total,
        "trials_done": done,
        "trials_running": running,
        "trials_errored": errored,
        "trials_failed": failed,
        "tsq_mean": sum(tsq) / len(tsq) if tsq else None,
        "n_tsq": len(tsq),
        "trials_excluded": done - len(tsq),
        "ttft_ms_mean": sum(ttft) / len(ttft) if ttft else None,
        "n_requests": len(ttft),
    }
