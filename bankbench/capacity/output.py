"""What a capacity search ends with: the level table, the headline line, the frontier plot,
and the sweep's ordinary report (with its consistency section)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from bankbench.capacity import plan
from contracts.capacity import CAPACITY_PLOT, CapacityRecord


def level_table(record: CapacityRecord) -> pd.DataFrame:
    """One row per searched level (in level order): phase, verdict, each measured value, and
    the decision figures (floor, agreement with the reference, drop and its bound)."""
    rows = []
    for step in sorted(record.steps, key=lambda s: s.level):
        row: dict[str, object] = {"level": step.level, "phase": step.phase,
                                  "passed": step.passed, "reused": step.reused,
                                  "seconds": round(step.seconds, 1)}
        for check in step.checks:
            if not check.name.endswith("_drop"):
                row[check.name] = check.value
        d = step.decisions
        if d is not None:
            row.update({"scenarios": d.scenarios, "floor": d.floor.mean,
                        "agreement": d.agreement.mean, "drop": d.drop.mean,
                        "drop_bound": d.drop_upper})
        rows.append(row)
    return pd.DataFrame(rows)


def render_table(table: pd.DataFrame) -> str:
    """The level table for a terminal: numbers to three significant digits."""
    shown = table.copy()
    for column in shown.columns:
        if shown[column].dtype.kind in "fO" and column not in ("seconds", "phase", "passed",
                                                                 "reused"):
            shown[column] = shown[column].map(
                lambda v: "n/a" if v is None or pd.isna(v) else f"{v:.3g}")
    shown["passed"] = shown["passed"].map({True: "pass", False: "FAIL"})
    return shown.to_string(index=False)


def _design_words(record: CapacityRecord) -> str:
    design = record.design
    if design is None:
        return ""
    words = (f"; design {design.scenarios} scenarios x {design.repeats} repeats, "
             f"best bound {design.best_bound:.2f}")
    if design.power is not None:
        words += (f", power {design.power:.2f} at floor {design.floor:.2f}, detects drops "
                  f"≥ {design.detectable_drop:.2f}")
    return words


def headline(record: CapacityRecord) -> str:
    """`N concurrent agents within SLO … with decisions intact (…); capacity in [N, M),
    limited by …; design …`, per GPU when known; says so when the design cannot support the
    claim."""
    search = record.search
    bounds = ", ".join(f"{k}≤{v:g}" for k, v in search.slos.items()) or "no latency bound"
    floor = next((s.decisions.baseline.mean for s in record.steps
                  if s.decisions and s.decisions.baseline.mean is not None), None)
    intact = (f"{search.agreement_metric} drop below the reference's own agreement "
              f"< {search.max_drop:g} vs {search.reference or 'the lowest level'}"
              + (f", floor {floor:.2f}" if floor is not None else ""))
    why = {"max_level": " (the highest level tried still passed: raise --max-level, or "
                        "--limit/--attempts if the task count capped it)",
           "max_minutes": " (--max-minutes stopped the search before the frontier was "
                          "bracketed: a lower bound)"}.get(record.stopped_because or "", "")
    tail = ""
    if record.lowest_failing is not None:
        high = (f"c{record.boundary_high}" if record.boundary_high is not None
                else "untested (no failure beyond noise)")
        tail += (f"; capacity in [{record.capacity or 0}, {high}), limited by "
                 f"{', '.join(record.limiting) or 'n/a'} at c{record.lowest_failing}")
    if record.cliffs:
        tail += f"; cliff: {'; '.join(record.cliffs)}"
    tail += _design_words(record)
    if record.deterministic is not None:
        tail += ("; server batch-invariant" if record.deterministic else
                 "; server not batch-invariant (numerical noise is in the floor)")
    warning = plan.verdict(record.design, search.max_drop) if record.design else None
    lead = f"{warning.upper()[0]}{warning[1:]} — " if warning else ""
    if record.capacity is None:
        if record.lowest_failing is None:
            return f"{lead}no level was judged{why or ''}: no capacity found"
        return (f"{lead}0 concurrent agents within SLO {bounds} with decisions intact "
                f"({intact}): even c{record.lowest_failing} failed{tail}")
    gpus = ""
    if search.gpus:
        gpus = f" ({record.capacity / search.gpus:g} per GPU on {search.gpus} GPUs)"
    agents = "agent" if record.capacity == 1 else "agents"
    return (f"{lead}{record.capacity} concurrent {agents} within SLO {bounds} with decisions "
            f"intact ({intact}){gpus}{why}{tail}")


def draw_frontier(sweep_dir: Path, record: CapacityRecord) -> Path | None:
    from analysis import plots

    table = level_table(record)
    if table.empty:
        return None
    bounds = {k: v for k, v in record.search.slos.items() if k in table}
    for name in [*bounds, "drop", "drop_bound", "floor", "agreement"]:
        table[name] = pd.to_numeric(table.get(name), errors="coerce")
    return plots.capacity_frontier(table, bounds, record.search.max_drop,
                                   record.capacity, sweep_dir / CAPACITY_PLOT)
