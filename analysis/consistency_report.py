"""The consistency section of report.md, its data file and figure, and its terminal table:
what `analysis.report.write_report` and `bankbench capacity` call (analysis/consistency.py
computes the numbers)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from analysis import plots
from analysis.consistency import METRICS, consistency_table, read_decisions
from analysis.markdown import fmt, table
from analysis.tables import Tables

CONSISTENCY_CSV = "consistency.csv"
CONSISTENCY_PNG = "consistency_vs_concurrency.png"
_HEADERS = {"tool_f1": "tool F1", "arg_agreement": "args agree",
            "schema_valid": "schema-valid calls %", "malformed": "malformed replies %",
            "truncated": "truncated replies %", "lost": "trials lost %"}
# Shares shown in percent: a bare 1 under "truncated" reads as a count of one.
_PERCENT = ("schema_valid", "malformed", "truncated", "lost")


def _with_ci(row: pd.Series, key: str) -> str:
    if key in _PERCENT:
        return "–" if pd.isna(row[key]) else f"{100 * row[key]:.1f} %"
    if pd.isna(row[f"{key}_ci_low"]) or key not in ("tool_f1", "arg_agreement"):
        return fmt(row[key])
    return f"{fmt(row[key])} [{fmt(row[f'{key}_ci_low'])}, {fmt(row[f'{key}_ci_high'])}]"


def _shown(frame: pd.DataFrame) -> pd.DataFrame:
    shown = frame[["source", "level", "reference", "n_pairs"]].copy()
    for metric in METRICS:
        shown[metric.key] = [_with_ci(row, metric.key) for _, row in frame.iterrows()]
    return shown


def write_consistency(tables: Tables, out: Path, *, draw: bool = True
                      ) -> tuple[pd.DataFrame, list[str]]:
    """consistency.csv (and the figure when there are several levels) in `out`; returns the
    table and the report section's Markdown lines (none when no trial finished)."""
    decisions = read_decisions(tables).frame
    if decisions.empty:
        return pd.DataFrame(), []
    frame = consistency_table(decisions)
    frame.to_csv(out / CONSISTENCY_CSV, index=False)
    lines = ["## Decision consistency under load (no labels needed)", "",
             "Each trial's tool calls (the bank's record of the scored attempt) against the "
             "same scenario and repeat at the reference level; mean with 95% scenario-"
             "clustered bootstrap interval. A trial lost at a level counts 0 in agreement.", "",
             table(_shown(frame), ["source", "level", "reference", "pairs",
                                   *(_HEADERS[m.key] for m in METRICS)]), ""]
    if draw and frame.groupby("source")["level"].nunique().max() > 1:
        png = plots.consistency_vs_concurrency(frame, out / "plots" / CONSISTENCY_PNG)
        lines += [f"![Decision consistency vs concurrency]({png.relative_to(out).as_posix()})",
                  ""]
    return frame, lines


def console_table(frame: pd.DataFrame) -> str:
    """The per-level consistency table for a terminal."""
    return _shown(frame).rename(columns={**_HEADERS, "n_pairs": "pairs"}).to_string(
        index=False)
