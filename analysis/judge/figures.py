"""Judge figures per (source, level) for the report, read from the verdict files beside the
trials: means of judge TSQ and action completion over trials, with the same scenario-clustered
bootstrap interval as bankbench's own TSQ. Only trials that count for quality (scored,
agent_failed) are read; a verdict with no parsed sample is counted, never scored as 0."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.metrics.base import cluster_bootstrap_mean_ci
from analysis.status import QUALITY_STATUSES
from contracts.judge import JUDGE_DIR, JudgeRecord

NO_JUDGE = "none (no judge pass)"
COLUMNS = ("judge", "judge_n", "judge_unparseable", "judge_tsq_mean", "judge_tsq_ci_low",
           "judge_tsq_ci_high", "judge_ac_mean", "judge_ac_ci_low", "judge_ac_ci_high")
# How the report's judge table names each figure (`judge_tsq`, `judge_ac`: mean with its CI).
HEADERS = {"judge": "judge", "judge_n": "judged", "judge_unparseable": "unparseable/failed",
           "judge_tsq": "judge TSQ", "judge_ac": "action completion"}


def _records(trial_dir: Path) -> list[JudgeRecord]:
    out = []
    for path in sorted((trial_dir / JUDGE_DIR).glob("*.json")):
        try:
            out.append(JudgeRecord.model_validate_json(path.read_bytes()))
        except (OSError, ValueError):
            continue
    return out


def _label(record: JudgeRecord) -> str:
    return f"{record.model} (prompt {record.prompt_version}, sha256 {record.prompt_sha256[:12]})"


def _stats(rows: list[tuple[str, float | None]]) -> tuple[float, float, float]:
    kept = [(s, v) for s, v in rows if v is not None]
    if not kept:
        return np.nan, np.nan, np.nan
    values = np.array([v for _, v in kept], dtype=float)
    clusters = np.array([s for s, _ in kept])
    return cluster_bootstrap_mean_ci(values, clusters)


def level_judge(trials: pd.DataFrame, jobs: pd.DataFrame) -> pd.DataFrame:
    """One row per (source, level) with `COLUMNS`; the judge shown is the (model, prompt)
    that judged most trials of the level (others are named in the `judge` text)."""
    rows = []
    for (source, level), group in jobs.groupby(["source", "level"], sort=False):
        found: list[JudgeRecord] = []
        for job in group.itertuples(index=False):
            mine = trials[(trials["source"] == source) & (trials["job"] == job.job)
                          & trials["status"].isin(QUALITY_STATUSES)]
            for trial in mine["trial"]:
                found += _records(Path(job.path) / trial)
        # A verdict whose every request failed judged nothing: a failed pass is never named
        # as the level's judge (`bankbench judge` printed each failure's reason).
        found = [r for r in found if r.status != "error"]
        row: dict = {"source": source, "level": level, "judge": NO_JUDGE, "judge_n": 0,
                     "judge_unparseable": 0}
        if found:
            counts = Counter(_label(r) for r in found)
            chosen = max(sorted(counts), key=lambda k: counts[k])
            used = [r for r in found if _label(r) == chosen]
            others = sorted(set(counts) - {chosen})
            row["judge"] = chosen + (f"; also on disk: {', '.join(others)}" if others else "")
            row["judge_n"] = sum(r.tool_selection_quality.mean is not None for r in used)
            row["judge_unparseable"] = sum(r.status in ("unparseable", "error") for r in used)
            for key, metric in (("judge_tsq", "tool_selection_quality"),
                                ("judge_ac", "action_completion")):
                mean, low, high = _stats([(r.scenario_id, getattr(r, metric).mean)
                                          for r in used])
                row.update({f"{key}_mean": mean, f"{key}_ci_low": low, f"{key}_ci_high": high})
        rows.append(row)
    return pd.DataFrame(rows, columns=["source", "level", *COLUMNS])
