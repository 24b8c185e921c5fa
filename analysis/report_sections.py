"""Sections of report.md that read only the summary or the trials: the summary table first,
status failures, input problems, self-evaluation, and the per-level table helper the other
sections share (analysis/report.py assembles them)."""

from __future__ import annotations

import pandas as pd

from analysis.console import summary_table
from analysis.markdown import table
from analysis.metrics import labels, usage

MAX_ISSUES_SHOWN = 20
_COUNT_NAMES = ("level", "configured_concurrency", "k", "judge_n", "judge_unparseable")


def counts_as_ints(frame: pd.DataFrame) -> pd.DataFrame:
    """Count columns (`n_*`, `*_count`, levels) as integers (nullable: a missing count stays
    empty), so a CSV says 12 and not 12.0; a column with a fractional value is left alone."""
    out = frame.copy()
    for column in out.columns:
        name = str(column)
        if not (name.startswith("n_") or name.endswith("_count") or name in _COUNT_NAMES):
            continue
        values = pd.to_numeric(out[column], errors="coerce")
        if values.notna().any() and (values.dropna() % 1 == 0).all():
            out[column] = values.astype("Int64")
    return out


def section(summary: pd.DataFrame, columns: dict[str, str]) -> str:
    present = {k: v for k, v in columns.items() if k in summary.columns}
    frame = summary[["source", "level", *present]]
    return table(frame, ["source", "level", *present.values()])


def summary_block(summary: pd.DataFrame) -> list[str]:
    """The table the terminal shows when a sweep or report ends, first in report.md too."""
    if summary.empty:
        return []
    return ["## Summary", "", "```text", summary_table(summary), "```", "",
            "TSQ excludes `infra_failed` trials (*TSQ infra=0* counts them as 0); *excluded*: "
            "trials left out of quality (see *Trials*).", ""]


def self_eval_section(summary: pd.DataFrame) -> list[str]:
    """The self-evaluation section, or one line when no trial was evaluated (self-eval off):
    a table of zeros would read as a measured effect of nothing."""
    evaluated = [c for c in ("retried_share", "extra_tokens_per_trial")
                 if c in summary.columns and (summary[c].fillna(0) > 0).any()]
    if not evaluated:
        return ["## Self-evaluation", "", "Off: no trial had an evaluator call or a retried "
                "attempt (`--ak self_eval=true` turns it on).", ""]
    return ["## Self-evaluation", "", section(summary, labels(
        *(m.key for m in usage.SELF_EVAL))), ""]


def failures_section(trials: pd.DataFrame) -> list[str]:
    failed = trials[~trials["status"].isin(["scored", "running"])]
    if failed.empty:
        return []
    reasons = (failed.assign(reason=failed["status_reason"].str.slice(0, 120))
               .groupby(["source", "level", "status", "reason"]).size()
               .rename("trials").reset_index().sort_values("trials", ascending=False))
    return ["**Why trials failed**", "", table(reasons.head(30)), ""]


def issues_section(issues: pd.DataFrame) -> list[str]:
    if issues.empty:
        return []
    lines = [f"**Input problems ({len(issues)})** — these rows were skipped or read in part:", ""]
    for row in issues.head(MAX_ISSUES_SHOWN).itertuples(index=False):
        where = f"{row.path}:{int(row.line)}" if pd.notna(row.line) else row.path
        lines.append(f"- `{where}`: {row.message}")
    if len(issues) > MAX_ISSUES_SHOWN:
        lines.append(f"- … and {len(issues) - MAX_ISSUES_SHOWN} more (see summary.json)")
    return [*lines, ""]
