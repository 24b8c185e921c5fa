"""What a capacity search ends with: the level table, the headline line, the frontier plot,
and the sweep's ordinary report (with its consistency section)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pandas as pd

from analysis.metrics.host import saturation_warning
from analysis.metrics.integrity import ANY_COLUMN, summary_key
from bankbench.capacity import plan
from bankbench.capacity.checks import ACHIEVED_CHECK
from bankbench.capacity.search import boundary, bracket, limiting_level, tier_steps
from contracts.capacity import CAPACITY_PLOT, CapacityRecord, CapacityStep, Tier

INTEGRITY_ANY = summary_key(ANY_COLUMN)  # any class: named only when no single class is


def level_table(record: CapacityRecord) -> pd.DataFrame:
    """One row per searched level (in level order): phase, verdict, repeats, each measured
    value, and the decision figures (the level's own agreement, agreement with the
    reference, the divergence judged and its upper bound, the drop shown beside it)."""
    rows = []
    for step in sorted(record.steps, key=lambda s: s.level):
        row: dict[str, object] = {"level": step.level, "phase": step.phase,
                                  "verdict": step.verdict, "repeats": step.repeats,
                                  "achieved": step.achieved_concurrency,
                                  "reused": step.reused, "seconds": round(step.seconds, 1)}
        if len(step.tiers) > 1:  # `verdict` is the first tier's; each tier's beside it
            row.update({f"verdict {t.name}": t.verdict for t in step.tiers})
        for check in [*step.checks, *(c for t in step.tiers for c in t.checks)]:
            if not check.name.endswith("_divergence"):
                row.setdefault(check.name, check.value)
        d = step.decisions
        if d is not None:
            row.update({"scenarios": d.scenarios, "floor": d.own.mean,
                        "agreement": d.across.mean, "divergence": d.divergence.mean,
                        "divergence_bound": d.upper, "drop": d.drop.mean})
        rows.append(row)
    return pd.DataFrame(rows)


def render_table(table: pd.DataFrame) -> str:
    """The level table for a terminal: numbers to three significant digits."""
    shown = table.copy()
    for column in shown.columns:
        if shown[column].dtype.kind in "fO" and column not in (
                "seconds", "phase", "verdict", "reused") and not column.startswith("verdict "):
            shown[column] = shown[column].map(
                lambda v: "n/a" if v is None or pd.isna(v) else f"{v:.3g}")
    return shown.to_string(index=False)


def _design_words(record: CapacityRecord) -> str:
    design = record.design
    if design is None:
        return ""
    return (f"; design {design.scenarios} scenarios x {design.repeats} repeats (doubled up "
            f"to {design.max_looks} looks), best bound {design.best_bound:.2f}")


def _repeats_words(record: CapacityRecord) -> str:
    by_level = {s.level: s.repeats for s in record.steps if s.repeats is not None}
    if not by_level:
        return ""
    return "; repeats per level " + " ".join(f"c{lv}:{n}" for lv, n in sorted(by_level.items()))


def _inconclusive_words(record: CapacityRecord) -> str:
    """Each level neither certified nor failed, with its repeats and why: decisions neither
    shown intact nor degraded, or its load not held (the runner's reason)."""
    if not record.inconclusive:
        return ""
    steps = {s.level: s for s in record.steps}
    shown = []
    for level in record.inconclusive:
        step = steps[level]
        why = [c.note or "achieved concurrency under the bound" if c.name == ACHIEVED_CHECK
               else "decisions neither shown intact nor degraded"
               for c in step.checks if not c.passed]
        shown.append(f"c{level} ({step.repeats} repeats: {'; '.join(why)})")
    return "; inconclusive (not certified, not failed): " + ", ".join(shown)


def _integrity_words(record: CapacityRecord) -> str:
    """Where tool calls start breaking beyond noise (against the lowest level,
    analysis/integrity.py), and how: the integrity classes worse there."""
    worse = sorted((s for s in record.steps if s.integrity_worse), key=lambda s: s.level)
    if not worse:
        return ""
    classes = [c for c in worse[0].integrity_worse if c != INTEGRITY_ANY] or \
        worse[0].integrity_worse
    return f"; tool calls break from c{worse[0].level}: {', '.join(classes)}"


def _control_words(record: CapacityRecord) -> str:
    """The control arm's split at the capacity and at the first level above it that did not
    pass."""
    shown = []
    unpassed = min((s.level for s in record.steps if s.verdict != "pass"
                    and (record.capacity is None or s.level > record.capacity)), default=None)
    for step in sorted(record.steps, key=lambda s: s.level):
        if step.control is None or step.level not in (record.capacity, unpassed):
            continue
        c = step.control

        def fmt(interval) -> str:
            return "n/a" if interval.mean is None else f"{interval.mean:.3f}"

        shown.append(f"c{step.level} divergence {fmt(c.total)} = numerics {fmt(c.numerics)} "
                     f"+ scheduling, time-outs and truncation {fmt(c.scheduling)}")
    return "; control arm (batch-invariant): " + ", ".join(shown) if shown else ""


def bound_words(tier: Tier) -> str:
    """`ttfc_p90_ms≤2000, output_tps_per_user_p10≥20`."""
    words = [f"{k}≤{v:g}" for k, v in tier.slos.items()]
    words += [f"{k}≥{v:g}" for k, v in tier.floors.items()]
    return ", ".join(words) or "no latency bound"


def _decision_steps(record: CapacityRecord) -> list[SimpleNamespace]:
    """The levels judged by the decision check alone: passed, shown degraded (fail), or
    within noise (inconclusive)."""
    out = []
    for step in record.steps:
        check = next((c for c in step.checks if c.name.endswith("_divergence")), None)
        if check is not None:
            out.append(SimpleNamespace(level=step.level, verdict=(
                "pass" if check.passed else "fail" if check.confident else "inconclusive")))
    return out


def _interval(capacity: int | None, high: int | None) -> str:
    return f"[{capacity or 0}, {f'c{high}' if high is not None else 'untested'})"


def tier_table(record: CapacityRecord) -> pd.DataFrame:
    """One row per tier (its bounds, capacity, boundary, what limits it and where, per
    accelerator when --gpus is known), then the decision check's own row: the capacity the
    decisions alone allow, shared by every tier."""
    gpus = record.search.gpus
    rows = []
    for tier, result in zip(record.search.tier_list(), record.tiers, strict=False):
        at = limiting_level(tier_steps(record.steps, tier.name), result.capacity)
        row = {"tier": tier.name, "bounds": bound_words(tier),
               "capacity": result.capacity or 0,
               "boundary": _interval(result.capacity, result.boundary_high),
               "limited by": (f"{', '.join(result.limiting)} at c{at}" if at is not None
                              else "nothing (the highest level passed)")}
        if gpus:
            row["per accelerator"] = f"{(result.capacity or 0) / gpus:g}"
        rows.append(row)
    decisions = _decision_steps(record)
    if decisions:
        capacity, _ = bracket(decisions)
        degraded = boundary(decisions, capacity)
        search = record.search
        row = {"tier": "decisions", "bounds": f"{search.agreement_metric} divergence < "
                                              f"{search.max_divergence:g}",
               "capacity": capacity or 0, "boundary": _interval(capacity, degraded),
               "limited by": (f"decisions shown degraded at c{degraded}"
                              if degraded is not None else "not shown degraded up to "
                              f"c{max(s.level for s in decisions)}")}
        if gpus:
            row["per accelerator"] = f"{(capacity or 0) / gpus:g}"
        rows.append(row)
    return pd.DataFrame(rows)


def saturation_line(steps: list[CapacityStep]) -> str | None:
    """The sweep report's warning (analysis/metrics/host.py) for the steps whose level ran
    on a saturated client host; None when none did or none was sampled."""
    return saturation_warning(
        (s.level, s.host_cpu_busy, float("nan") if s.host_other_cpu is None
         else s.host_other_cpu)
        for s in sorted(steps, key=lambda s: s.level) if s.host_cpu_busy is not None)


def headline(record: CapacityRecord) -> str:
    """`N concurrent agents (achieved A) within SLO … with decisions intact (…); capacity in
    [N, M), limited by …; inconclusive …; repeats per level …; design …`, per GPU when known;
    says so first when the design cannot support the claim; ends with the sweep report's
    saturated-host warning when a level ran on a saturated host (one line still: scripts
    read the answer as the output's last line)."""
    line = _headline(record)
    warning = saturation_line(record.steps)
    return f"{line}; {warning}" if warning else line


def _headline(record: CapacityRecord) -> str:
    search = record.search
    tiers = search.tier_list()
    bounds = bound_words(tiers[0])
    reference = f"reference {record.reference}" if record.reference else "the reference"
    intact = (f"{search.agreement_metric} divergence of decision distributions from "
              f"{reference} < {search.max_divergence:g}, by its upper bound")
    why = {"max_level": " (the highest level tried still passed: raise --max-level, or "
                        "--limit/--attempts if the task count capped it)",
           "max_minutes": " (--max-minutes stopped the search before the frontier was "
                          "bracketed: a lower bound)"}.get(record.stopped_because or "", "")
    tail = ""
    unpassed = min((s.level for s in record.steps if s.verdict != "pass"
                    and (record.capacity is None or s.level > record.capacity)), default=None)
    if unpassed is not None:
        high = (f"c{record.boundary_high}" if record.boundary_high is not None
                else "untested (no failure beyond noise)")
        tail += (f"; capacity in [{record.capacity or 0}, {high}), limited by "
                 f"{', '.join(record.limiting) or 'n/a'} at "
                 f"c{limiting_level(record.steps, record.capacity)}")
    tail += _inconclusive_words(record) + _integrity_words(record) + _control_words(record)
    if record.cliffs:
        tail += f"; cliff: {'; '.join(record.cliffs)}"
    tail += _repeats_words(record) + _design_words(record)
    if record.deterministic is not None:
        tail += ("; server batch-invariant" if record.deterministic else
                 "; server not batch-invariant (numerical noise is in the reference)")
    warning = plan.verdict(record.design, search.max_divergence) if record.design else None
    lead = f"{warning.upper()[0]}{warning[1:]} — " if warning else ""
    if len(tiers) > 1:
        lead += f"tier {tiers[0].name}: "
    if record.capacity is None:
        if record.lowest_failing is None and not record.inconclusive:
            return f"{lead}no level was judged{why or ''}: no capacity found"
        first = min(s.level for s in record.steps)
        return (f"{lead}0 concurrent agents within SLO {bounds} with decisions intact "
                f"({intact}): even c{first} did not pass{tail}")
    gpus = ""
    if search.gpus:
        gpus = f" ({record.capacity / search.gpus:g} per GPU on {search.gpus} GPUs)"
    agents = "agent" if record.capacity == 1 else "agents"
    achieved = (f" (achieved {record.achieved_concurrency:.1f})"
                if record.achieved_concurrency is not None else
                " (achieved concurrency not measured)")
    return (f"{lead}{record.capacity} concurrent {agents}{achieved} within SLO {bounds} with "
            f"decisions intact ({intact}){gpus}{why}{tail}")


def draw_frontier(sweep_dir: Path, record: CapacityRecord) -> Path | None:
    from analysis import plots

    table = level_table(record)
    if table.empty:
        return None
    bounds = {k: v for k, v in record.search.tier_list()[0].slos.items() if k in table}
    for name in [*bounds, "divergence", "divergence_bound", "floor", "agreement"]:
        table[name] = pd.to_numeric(table.get(name), errors="coerce")
    return plots.capacity_frontier(table, bounds, record.search.max_divergence,
                                   record.capacity, sweep_dir / CAPACITY_PLOT)
