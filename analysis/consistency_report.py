"""The consistency section of report.md, its data file and figure, and its terminal table:
what `analysis.report.write_report` and `bankbench capacity` call (analysis/consistency.py
computes the numbers)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from analysis.consistency import consistency_table, read_decisions
from analysis.markdown import fmt, table
from analysis.tables import Tables

CONSISTENCY_CSV = "consistency.csv"
CONSISTENCY_PNG = "consistency_vs_concurrency.png"
_SHOWN = [  # (column, header, with interval)
    ("tool_f1_n", "scenarios", False), ("tool_f1_floor", "floor (F1)", True),
    ("tool_f1", "vs reference (F1)", True), ("tool_f1_divergence", "divergence", True),
    ("tool_f1_drop", "drop", True),
    ("arg_agreement", "args agree", True), ("schema_valid", "schema-valid calls %", False),
    ("malformed", "malformed replies %", False), ("truncated", "truncated replies %", False),
    ("lost", "trials lost to server %", False),
    ("harness_lost", "trials lost to harness %", False)]
# Shares shown in percent: a bare 1 under "truncated" reads as a count of one.
_PERCENT = ("schema_valid", "malformed", "truncated", "lost", "harness_lost")


def _with_ci(row: pd.Series, key: str, interval: bool) -> str:
    if key not in row.index:  # a table written before the column existed
        return "n/a"
    if key.endswith("_n"):
        return str(int(row[key]))
    if key in _PERCENT:
        return "–" if pd.isna(row[key]) else f"{100 * row[key]:.1f} %"
    if pd.isna(row[key]) and key.startswith("tool_f1"):
        return row.get("tool_f1_note") or "n/a"
    if not interval or pd.isna(row.get(f"{key}_ci_low")):
        return fmt(row[key])
    return f"{fmt(row[key])} [{fmt(row[f'{key}_ci_low'])}, {fmt(row[f'{key}_ci_high'])}]"


def _shown(frame: pd.DataFrame) -> pd.DataFrame:
    shown = frame[["source", "level", "reference"]].copy()
    for key, header, interval in _SHOWN:
        shown[header] = [_with_ci(row, key, interval) for _, row in frame.iterrows()]
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
             "Each scenario runs at least twice per level. *floor*: agreement (tool-name F1; "
             "two declines agree) between a level's own repeats that did not run side by "
             "side; *vs reference*: between its repeats and the reference level's; "
             "*divergence*: (floor + the reference's floor)/2 minus *vs reference*, 0 when "
             "the two levels' decisions have the same distribution however noisy (what "
             "`bankbench capacity` judges); *drop*: the reference's agreement with itself "
             "minus *vs reference*, which also grows when a level is only noisier. Means over "
             "scenarios with 95% intervals that stay open when every scenario agrees "
             "(analysis/decision_noise.py). Lost trials are left out of agreement and counted "
             "apart: "
             "*lost to server*: server/network errors and time-outs; *lost to harness*: the "
             "harness's own failures.", "",
             table(_shown(frame), ["source", "level", "reference",
                                   *(h for _, h, _ in _SHOWN)]), ""]
    if draw and frame.groupby("source")["level"].nunique().max() > 1:
        from analysis import plots  # matplotlib and seaborn only when figures are drawn

        png = plots.consistency_vs_concurrency(frame, out / "plots" / CONSISTENCY_PNG)
        lines += [f"![Decision consistency vs concurrency]({png.relative_to(out).as_posix()})",
                  ""]
    return frame, lines


def console_table(frame: pd.DataFrame) -> str:
    """The per-level consistency table for a terminal."""
    return _shown(frame).to_string(index=False)
