"""`running_summary(job_dir)`: a cheap look at a job that is still running, for sweep polling.

Reads only each trial's result.json and its llm_calls.jsonl lines (no DataFrames; TTFT by the
analysis's own definition), so it can run between polls of a large job.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from analysis import files
from analysis.metrics import latency
from contracts.llm_calls import LLM_CALLS_FILE, MEASURED_ROLES, LLMCallRecord


def _ttfts(trial_dir: Path) -> list[float]:
    try:
        lines = (trial_dir / "agent" / LLM_CALLS_FILE).read_bytes().splitlines()
    except OSError:
        return []
    values = []
    for line in lines:
        try:
            record = LLMCallRecord.model_validate_json(line)
        except ValueError:
            continue  # a line still being written
        if record.role not in MEASURED_ROLES:
            continue  # a simulated customer's call: not the server under test
        ttft = latency.ttft_ns(record.send_ns, record.read_ns)
        if ttft is not None:
            values.append(ttft * latency.TTFT.scale)
    return values


def running_summary(job_dir: Path) -> dict[str, Any]:
    """Trials done / running, errors, running mean TSQ and TTFT of one Harbor job directory."""
    job_dir = Path(job_dir)
    issues: list[files.Issue] = []
    total = files.read_json_dict(job_dir / "result.json", issues).get("n_total_trials")
    done = running = errored = 0
    tsq: list[float] = []
    ttft: list[float] = []
    for trial_dir in (d for d in job_dir.iterdir() if d.is_dir()):
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
        if result and result.verifier_result and result.verifier_result.rewards:
            value = result.verifier_result.rewards.get("tsq")
            if isinstance(value, int | float):
                tsq.append(float(value))
    return {
        "trials_total": total,
        "trials_done": done,
        "trials_running": running,
        "trials_errored": errored,
        "tsq_mean": sum(tsq) / len(tsq) if tsq else None,
        "n_tsq": len(tsq),
        "ttft_ms_mean": sum(ttft) / len(ttft) if ttft else None,
        "n_requests": len(ttft),
    }
