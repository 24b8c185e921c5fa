"""`running_summary(job_dir)`: a cheap look at a job that is still running, for sweep polling.

Reads only each trial's result.json and its llm_calls.jsonl lines (TTFT by the tables' own
derivation, `latency.timings`), so it can run between polls of a large job.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from analysis import files
from analysis.metrics import latency
from analysis.status import QUALITY_STATUSES, classify
from contracts.llm_calls import LLM_CALLS_FILE, MEASURED_ROLES, LLMCallRecord
from contracts.sweep import level_jobs


def _ttfts(trial_dir: Path) -> list[float]:
    try:
        lines = (trial_dir / "agent" / LLM_CALLS_FILE).read_bytes().splitlines()
    except OSError:
        return []
    records = []
    for line in lines:
        try:
            record = LLMCallRecord.model_validate_json(line)
        except ValueError:
            continue  # a line still being written
        if record.role in MEASURED_ROLES:  # not a simulated customer's call
            records.append(record)
    return latency.timings(records)[latency.TTFT.metric.key].dropna().tolist()


def trial_status(trial_dir: Path, job_finished: bool = False) -> tuple[str, str]:
    """Status class and reason of one trial (analysis.status.classify, read the way the tables
    read it), from its result.json, reward.json, the agent's report and exception.txt. The
    sweep asks it whether a trial was interrupted."""
    issues: list[files.Issue] = []
    result = files.read_trial_result(trial_dir, issues)
    agent = files.read_agent_status(trial_dir, issues, result)
    exc_type, exc_msg = files.trial_exception(trial_dir, result)
    rewards = result.verifier_result.rewards if result and result.verifier_result else None
    if rewards is None and result is not None:
        rewards = files.read_reward_file(trial_dir, issues)
    return classify(
        has_result=result is not None, job_finished=job_finished,
        exception_type=exc_type, exception_message=exc_msg,
        agent_status=agent.status if agent else None,
        agent_reason=agent.reason if agent else None,
        agent_attempts=agent.attempts if agent else None,
        has_reward=bool(rewards),
    )


def running_summary(job_dir: Path) -> dict[str, Any]:
    """Trials done / running, failures by class, running mean TSQ (over the trials quality
    counts: an infra failure is not a TSQ of 0) and TTFT of one Harbor job directory (or of a
    sharded level folder: all its shard jobs)."""
    jobs = level_jobs(Path(job_dir))
    issues: list[files.Issue] = []
    totals = [files.read_json_dict(j / "result.json", issues).get("n_total_trials")
              for j in jobs]
    total = sum(totals) if totals and all(isinstance(t, int) for t in totals) else None
    done = running = errored = 0
    failed: dict[str, int] = {}
    tsq: list[float] = []
    ttft: list[float] = []
    for trial_dir in (d for j in jobs for d in j.iterdir() if d.is_dir()):
        if not (trial_dir / "config.json").exists():
            continue
        ttft += _ttfts(trial_dir)
        if not (trial_dir / "result.json").exists():
            running += 1
            continue
        done += 1
        result = files.read_trial_result(trial_dir, issues)
        if result is None or result.exception_info is not None:
            errored += 1
        status, _ = trial_status(trial_dir)
        if status != "scored":
            failed[status] = failed.get(status, 0) + 1
        if status not in QUALITY_STATUSES:
            continue
        value = None
        if result and result.verifier_result and result.verifier_result.rewards:
            value = result.verifier_result.rewards.get("tsq")
        if isinstance(value, int | float):
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
        "ttft_ms_mean": sum(ttft) / len(ttft) if ttft else None,
        "n_requests": len(ttft),
    }
