"""One progress line for a running level: trials done of the total, failures by class, an ETA,
and the running TSQ (quality trials only) and the mean time to the first chunk."""

from __future__ import annotations

import time
from pathlib import Path

from harbor.models.trial.paths import TrialPaths

from bankbench.sweep.harbor_job import finished_trials, trial_dirs


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def eta(done: int, total: int | None, elapsed_s: float, done_before: int = 0,
        since_last_s: float = 0.0) -> str | None:
    """Time left at the pace of the trials finished in this run (those a resumed level found
    already done took no time here), counted down from the last finish (`since_last_s` ago):
    it never climbs while nothing finishes, and says "overdue" once that wait passes the
    pace. None until one has finished."""
    ran = done - done_before
    if not total or ran <= 0 or done >= total:
        return None
    since_last_s = min(max(0.0, since_last_s), elapsed_s)
    left = (elapsed_s - since_last_s) / ran * (total - done) - since_last_s
    if left <= 0:
        return f"overdue (no trial finished for {_duration(since_last_s)})"
    return _duration(left)


def _since_last_finish(finished: list[Path]) -> float:
    """Seconds since the newest result.json of the finished trials was written."""
    stamps = []
    for trial in finished:
        try:
            stamps.append(TrialPaths(trial).result_path.stat().st_mtime)
        except OSError:
            continue
    return max(0.0, time.time() - max(stamps)) if stamps else 0.0


def line(level: int, job_dir: Path, *, total: int | None = None,
         started: float | None = None, done_before: int = 0) -> str | None:
    """`c4: 6/20 done, 4 running, 1 failed (1 infra_failed) | ETA 1 min 10 s | TSQ 0.512 (n=5,
    1 excluded) | first chunk …`.
    `started` is the level's time.monotonic() start; `done_before` the trials a resumed level
    already held."""
    started_trials = len(trial_dirs(job_dir))
    if not started_trials:
        return None
    finished = finished_trials(job_dir)
    done = len(finished)
    try:
        from analysis.progress import running_summary

        summary = running_summary(job_dir)
    except Exception:  # progress must never stop a sweep
        summary = {}
    total = summary.get("trials_total") or total
    text = f"  c{level}: {done}/{total} done" if total else f"  c{level}: {done} done"
    text += f", {started_trials - done} running"
    failed: dict[str, int] = summary.get("trials_failed") or {}
    n_failed = sum(failed.values())
    text += f", {n_failed} failed"
    if n_failed:
        text += " (" + ", ".join(f"{n} {k}" for k, n in sorted(failed.items())) + ")"
    if started is not None and (left := eta(done, total, time.monotonic() - started,
                                            done_before, _since_last_finish(finished))):
        text += f" | ETA {left}"
    tsq, ttft = summary.get("tsq_mean"), summary.get("ttft_ms_mean")
    if tsq is not None:
        excluded = summary.get("trials_excluded") or 0
        text += f" | TSQ {tsq:.3f} (n={summary.get('n_tsq')}" + (
            f", {excluded} excluded)" if excluded else ")")
    elif done:
        text += " | TSQ – (no scored trial yet)"
    if ttft is not None:
        # The client's first chunk, not the server's TTFT: a tool call parsed out of the
        # model's text arrives whole, so its first chunk is its last.
        text += f" | first chunk {ttft:.1f} ms"
    return text
