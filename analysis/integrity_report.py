"""The tool-call integrity section of report.md, its data file and figure (analysis/integrity.py
computes the table; analysis/metrics/integrity.py defines the classes)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from analysis.integrity import FAMILY_ALPHA, level_table
from analysis.markdown import table
from analysis.metrics import BY_KEY
from analysis.metrics.integrity import ANY_COLUMN, summary_key
from analysis.tables import Tables

INTEGRITY_CSV = "integrity.csv"
INTEGRITY_PNG = "integrity_vs_concurrency.png"
WORSE = "▲"


def _name(column: str) -> str:
    return BY_KEY[summary_key(column)].label


def _cell(row: pd.Series) -> str:
    if pd.isna(row["rate"]):
        return "–"
    text = f"{100 * row['rate']:.1f} % [{100 * row['ci_low']:.1f}, {100 * row['ci_high']:.1f}]"
    return f"{text} {WORSE}" if row["worse"] else text


def _wide(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """One row per class that failed somewhere (and any class), one column per level; and the
    classes that never failed."""
    failed = frame.groupby("class", sort=False)["failures"].sum()
    shown = [c for c in failed.index if failed[c] > 0 or c == ANY_COLUMN]
    never = [_name(c) for c in failed.index if c not in shown]
    rows = []
    levels = sorted(frame["level"].unique())
    count = frame[frame["class"] == ANY_COLUMN].set_index("level")["n"]
    rows.append({"class": "classified replies",
                 **{f"c{lv}": f"{int(count.get(lv, 0))}" for lv in levels}})
    for column in [*[c for c in shown if c != ANY_COLUMN], ANY_COLUMN]:
        part = frame[frame["class"] == column].set_index("level")
        rows.append({"class": _name(column),
                     **{f"c{lv}": _cell(part.loc[lv]) if lv in part.index else "–"
                        for lv in levels}})
    return pd.DataFrame(rows), never


def write_integrity(tables: Tables, out: Path, *, draw: bool = True
                    ) -> tuple[pd.DataFrame, list[str]]:
    """integrity.csv (and the figure when a source has several levels) in `out`; returns the
    level table and the report section's Markdown lines (one line saying why when no reply
    was classified: text tool mode, or records written before the classes existed)."""
    frame = level_table(tables.requests)
    if frame.empty:
        if tables.requests.empty:
            return frame, []
        return frame, ["## Tool-call integrity vs concurrency", "",
                       "Not measured: no agent reply both succeeded and offered tools with its "
                       "stream recorded (text tool mode, or calls recorded before the record "
                       "kept `tool_stream`).", ""]
    frame = frame.assign(name=[_name(c) for c in frame["class"]],
                         any=frame["class"] == ANY_COLUMN)
    frame.to_csv(out / INTEGRITY_CSV, index=False)
    lines = ["## Tool-call integrity vs concurrency", "",
             "Each agent reply to a request that succeeded and offered tools is classified by "
             "how its tool calls broke, if they did (definitions: *Metric definitions*, and "
             "docs/analysis.md). Per level: the share of classified replies in each class, "
             "with a 95 % interval clustered by scenario (Wilson at the design-effect sample "
             f"size). {WORSE}: worse than the reference level beyond noise — the per-scenario "
             "failure rates rose in significantly more scenarios than they fell (exact sign "
             "test) and the level's time blocks fail more than the reference's (exact "
             "permutation test, so one burst is not load); both, under Holm's correction "
             f"over every class and level at {FAMILY_ALPHA:.0%} family-wise. Classes overlap "
             "(a call cut by the length limit is also arguments that are not JSON)."]
    for source, part in frame.groupby("source", sort=False):
        wide, never = _wide(part)
        title = f"**{source}** (reference {part['reference'].iloc[0]})" \
            if frame["source"].nunique() > 1 else f"Reference: {part['reference'].iloc[0]}."
        lines += ["", title, "", table(wide, list(wide.columns))]
        if never:
            lines += ["", f"No failure at any level: {', '.join(never)}."]
    lines.append("")
    if draw and frame.groupby("source")["level"].nunique().max() > 1:
        from analysis import plots  # matplotlib and seaborn only when figures are drawn

        png = plots.integrity_vs_concurrency(frame, out / "plots" / INTEGRITY_PNG)
        lines += [f"![Tool-call integrity vs concurrency]({png.relative_to(out).as_posix()})",
                  ""]
    return frame, lines
