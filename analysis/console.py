"""A compact summary table for the terminal, read back from a report's `summary.csv`.

The report itself (report.md, plots, CSV/JSON) holds everything; this is the glance a user
gets when a sweep or report command ends: one row per source and level.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from analysis.markdown import fmt_excluded
from analysis.metrics import figure_of
from analysis.metrics.host import saturation_warnings
from analysis.provenance import SAMPLE_FALLBACK

# (summary column, format): the figures a serving engineer looks at first. Each header is the
# registry's short name of the column's figure (`header`), never typed here.
SHOWN: tuple[tuple[str, str], ...] = (
    ("level", "{:.0f}"),
    ("n_trials", "{:.0f}"),
    ("tsq_mean", "{:.3f}"),
    ("n_excluded", ""),  # beside TSQ: how many trials it leaves out, and their share
    ("tsq_ci_low", ""),  # the interval, from both ends
    ("tsq_infra0_mean", "{:.3f}"),
    ("solved_mean", "{:.3f}"),
    # The server's own TTFT where it reports one (Dynamo), the client's first chunk beside it:
    # a tool-call parser that holds a reply back until complete moves only the second.
    ("server_ttft_ms_p50", "{:,.1f}"),
    ("server_ttft_ms_p95", "{:,.1f}"),
    ("ttft_ms_p50", "{:,.1f}"),
    ("ttft_ms_p95", "{:,.1f}"),
    ("itl_ms_p50", "{:,.1f}"),
    ("e2e_ms_p50", "{:,.0f}"),
    ("output_token_throughput", "{:,.1f}"),
    ("request_throughput", "{:.3f}"),
    ("achieved_concurrency", "{:.2f}"),
)
GROUPING = ("source", "level")  # the columns that say which row it is, not a figure


def header(column: str) -> str:
    """A column's header: its metric's short name, with the statistic and unit for one of a
    distribution's figures ("server TTFT p50 ms"); KeyError for a column no metric defines."""
    if column in GROUPING:
        return column
    metric, stat = figure_of(column)
    if stat == "ci_low":
        return f"{metric.short} 95% CI"
    if stat and metric.distribution:
        return f"{metric.short} {stat} {metric.unit}"
    return metric.short


# Built at import: a column the registry does not know stops it (`header`).
COLUMNS: tuple[tuple[str, str, str], ...] = tuple(
    (header(column), column, fmt) for column, fmt in SHOWN)


def _cell(row: pd.Series, column: str, fmt: str) -> str:
    if column == "n_excluded":
        return fmt_excluded(row)
    if column == "tsq_ci_low":  # the CI column is built from two fields
        low, high = row.get("tsq_ci_low"), row.get("tsq_ci_high")
        if _missing(row.get("tsq_mean")):
            return "–"
        if _missing(low) or _missing(high):
            return "—"  # one scenario or one trial: no interval, not a zero-width one
        return f"[{low:.3f}, {high:.3f}]"
    value = row.get(column)
    return "–" if _missing(value) else fmt.format(value)


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def summary_table(summary: pd.DataFrame) -> str:
    """Fixed-width text table, one row per (source, level) of `summary`."""
    several = summary["source"].nunique() > 1 if "source" in summary else False
    headers = (["source"] if several else []) + [h for h, _, _ in COLUMNS]
    rows = []
    for _, row in summary.iterrows():
        cells = [_cell(row, column, fmt) for _, column, fmt in COLUMNS]
        rows.append(([str(row["source"])] if several else []) + cells)
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(headers)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(headers, widths, strict=True))]
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    if "dataset_source" in summary and (summary["dataset_source"] == SAMPLE_FALLBACK).any():
        lines.append(f"WARNING: dataset = {SAMPLE_FALLBACK}: the small bundled sample ran "
                     "instead of Agent Leaderboard v2; this TSQ is not comparable with hub runs.")
    lines += saturation_warnings(summary)
    return "\n".join(lines)


def summary_table_from(report_dir: Path) -> str | None:
    """The table for a written report, or None when it has no summary.csv rows."""
    path = Path(report_dir) / "summary.csv"
    if not path.exists():
        return None
    summary = pd.read_csv(path)
    return summary_table(summary) if len(summary) else None
