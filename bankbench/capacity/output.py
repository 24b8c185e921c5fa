"""What a capacity search ends with: the level table, the headline line, the frontier plot,
and the sweep's ordinary report (with its consistency section)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from contracts.capacity import CAPACITY_PLOT, CapacityRecord


def level_table(record: CapacityRecord) -> pd.DataFrame:
    """One row per searched level (in level order): phase, verdict, each measured value."""
    rows = []
    for step in sorted(record.steps, key=lambda s: s.level):
        row: dict[str, object] = {"level": step.level, "phase": step.phase,
                                  "passed": step.passed, "reused": step.reused,
                                  "seconds": round(step.seconds, 1)}
        for check in step.checks:
            row["agreement_ci_low" if check.name.endswith("_ci_low") else check.name] = (
                check.value)
        rows.append(row)
    return pd.DataFrame(rows)


def render_table(table: pd.DataFrame) -> str:
    """The level table for a terminal: numbers to three significant digits."""
    shown = table.copy()
    for column in shown.columns:
        if shown[column].dtype.kind == "f" and column != "seconds":
            shown[column] = shown[column].map(lambda v: "n/a" if pd.isna(v) else f"{v:.3g}")
    shown["passed"] = shown["passed"].map({True: "pass", False: "FAIL"})
    return shown.to_string(index=False)


def headline(record: CapacityRecord) -> str:
    """`N concurrent agents within SLO … (decisions consistent: …)`, per GPU when known."""
    search = record.search
    bounds = ", ".join(f"{k}≤{v:g}" for k, v in search.slos.items()) or "no latency bound"
    consistent = (f"{search.agreement_metric} 95% CI low ≥ {search.min_agreement:g} vs "
                  f"{search.reference or 'the lowest level'}")
    why = {"max_level": " (the highest level tried still passed: raise --max-level, or "
                        "--limit/--attempts if the task count capped it)",
           "max_minutes": " (--max-minutes stopped the search before the frontier was "
                          "bracketed: a lower bound)"}.get(record.stopped_because or "", "")
    if record.capacity is None:
        if record.lowest_failing is None:
            return f"no level was judged{why or ''}: no capacity found"
        return (f"0 concurrent agents within SLO {bounds} with decisions consistent "
                f"({consistent}): even c{record.lowest_failing} failed")
    gpus = ""
    if search.gpus:
        gpus = f" ({record.capacity / search.gpus:g} per GPU on {search.gpus} GPUs)"
    return (f"{record.capacity} concurrent agents within SLO {bounds} with decisions "
            f"consistent ({consistent}){gpus}{why}")


def draw_frontier(sweep_dir: Path, record: CapacityRecord) -> Path | None:
    from analysis import plots

    table = level_table(record)
    if table.empty:
        return None
    bounds = {k: v for k, v in record.search.slos.items() if k in table}
    for name in [*bounds, "agreement_ci_low"]:
        table[name] = pd.to_numeric(table[name], errors="coerce")
    return plots.capacity_frontier(table, bounds, record.search.min_agreement,
                                   record.capacity, sweep_dir / CAPACITY_PLOT)
