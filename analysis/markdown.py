"""Small Markdown helpers for report.md (no extra dependency)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd


def fmt(value: object, digits: int = 3) -> str:
    """Numbers with `digits` significant figures (integers whole), blanks for missing."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        if float(value).is_integer() and abs(value) < 1e12:
            return f"{int(value):,}"
        magnitude = abs(value)
        if magnitude >= 100:
            return f"{value:,.0f}"
        return f"{value:.{digits}g}" if magnitude >= 0.001 else f"{value:.2e}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def table(frame: pd.DataFrame, headers: Sequence[str] | None = None) -> str:
    """A GitHub-flavoured Markdown table of every row of `frame`."""
    names = list(headers) if headers is not None else [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(names) + " |", "|" + "---|" * len(names)]
    for row in frame.itertuples(index=False):
        lines.append("| " + " | ".join(fmt(v) for v in row) + " |")
    return "\n".join(lines)


def fmt_ci(row: pd.Series, key: str, suffix: str = "_mean") -> str:
    """`mean [low, high]` from a row's `<key><suffix>`, `<key>_ci_low`, `<key>_ci_high`;
    `mean [—]` when there is no interval (one scenario or trial)."""
    low, high = row.get(f"{key}_ci_low"), row.get(f"{key}_ci_high")
    interval = "[—]" if pd.isna(low) or pd.isna(high) else f"[{fmt(low)}, {fmt(high)}]"
    value = row.get(f"{key}{suffix}")
    return "–" if pd.isna(value) else f"{fmt(value)} {interval}"


def fmt_excluded(row: pd.Series) -> str:
    """`n (share)`: the trials a level's quality figures leave out and their share of the
    finished ones; `–` without counts."""
    count, share = row.get("n_excluded"), row.get("excluded_share")
    if count is None or pd.isna(count):
        return "–"
    return f"{count:.0f}" + ("" if share is None or pd.isna(share) else f" ({share:.0%})")
