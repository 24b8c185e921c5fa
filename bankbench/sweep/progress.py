"""One progress line for a running level: trials done, running TSQ and TTFT."""

from __future__ import annotations

from pathlib import Path

from bankbench.sweep.harbor_job import finished_trials, trial_dirs


def line(level: int, job_dir: Path) -> str | None:
    started = len(trial_dirs(job_dir))
    if not started:
        return None
    done = len(finished_trials(job_dir))
    text = f"  c{level}: {done} trials done, {started - done} running"
    try:
        from analysis.progress import running_summary

        summary = running_summary(job_dir)
    except Exception:  # progress must never stop a sweep
        return text
    tsq, ttft = summary.get("tsq_mean"), summary.get("ttft_ms_mean")
    if tsq is not None:
        text += f" | TSQ {tsq:.3f}"
    if ttft is not None:
        text += f" | TTFT {ttft:.1f} ms"
    return text
