"""`run_capacity`: bracket then bisect concurrency inside one sweep directory, judging each
level from its files (latency SLOs from analysis.summary, decisions against their own noise
from analysis.consistency / analysis.decision_noise), recording every step, the boundary, the
limiting checks, cliffs and the design's power in capacity.json.

Levels run through the sweep runner's own machinery (`open_sweep` / `run_level`): a complete
level is reused, a partial one continued, so an interrupted search resumes where it stopped.
"""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from analysis import tables as tables_mod
from analysis.consistency import level_scenarios, read_decisions, reference_rows
from analysis.decision_noise import per_level_confidence
from analysis.metrics.goodput import SLO
from analysis.summary import summarize
from bankbench.capacity import plan
from bankbench.capacity.search import (
    boundary,
    bracket,
    cliffs,
    describe,
    judge,
    levels_judgeable,
    limiting,
    next_level,
    slo_value,
)
from bankbench.sweep import harbor_job
from bankbench.sweep.errors import SweepError
from bankbench.sweep.level import folder_state
from bankbench.sweep.manifest import load_model, save_manifest, save_model
from bankbench.sweep.runner import open_sweep, run_level
from contracts.capacity import (
    CAPACITY_FILE,
    CapacityRecord,
    CapacitySearch,
    CapacityStep,
    Design,
)
from contracts.sweep import SweepConfig, level_dir


def load_record(sweep_dir: Path) -> CapacityRecord:
    return load_model(sweep_dir / CAPACITY_FILE, CapacityRecord, "capacity search")


def save_record(sweep_dir: Path, record: CapacityRecord) -> None:
    save_model(sweep_dir / CAPACITY_FILE, record)


def goodput_slo(search: CapacitySearch) -> SLO | None:
    """The per-request goodput bounds that match the search's p-bounds, so the report's
    goodput columns speak of the same limits."""
    fields = {"ttft_ms": "ttft", "itl_ms": "tpot", "e2e_s": "e2e"}
    bounds: dict[str, float] = {}
    for key, stem in fields.items():
        limits = [v for n, v in search.slos.items() if n.startswith(stem + "_p")]
        if limits:
            bounds[key] = min(limits) / (1000.0 if key == "e2e_s" else 1.0)
    return SLO(**bounds) if bounds else None


class Evaluation:
    """Everything one step needs, read once from the sweep directory."""

    def __init__(self, sweep_dir: Path, search: CapacitySearch,
                 reference: pd.DataFrame | None) -> None:
        tables = tables_mod.load(sweep_dir)
        self.summary = summarize(tables, goodput_slo(search))
        self.requests = tables.requests
        self.decisions = read_decisions(tables).frame
        self.reference_level = None
        if reference is None and len(self.decisions):
            self.reference_level = int(self.decisions["level"].min())
            reference = self.decisions[self.decisions["level"] == self.reference_level]
        self.reference = reference

    def step(self, search: CapacitySearch, level: int, phase: str, reused: bool,
             seconds: float, confidence: float) -> CapacityStep:
        summary_row = self.summary[self.summary["level"] == level].iloc[0]
        requests = self.requests[self.requests["level"] == level]
        at = self.decisions[self.decisions["level"] == level] if len(self.decisions) \
            else self.decisions
        lost = float(at["lost"].mean()) if len(at) else math.nan
        slo_values = {name: slo_value(name, summary_row, requests, lost)
                      for name in search.slos}
        is_reference = level == self.reference_level
        scenarios = (level_scenarios(at, self.reference, search.agreement_metric, is_reference)
                     if len(at) and self.reference is not None else [])
        tsq = summary_row.get("tsq_mean")
        checks, figures = judge(search, slo_values, scenarios, is_reference, confidence,
                                None if tsq is None else float(tsq))
        return CapacityStep(level=level, phase=phase, passed=all(c.passed for c in checks),
                            reused=reused, checks=checks, decisions=figures, seconds=seconds,
                            at=datetime.now(UTC))


def _reference(search: CapacitySearch) -> pd.DataFrame | None:
    if search.reference is None:
        return None
    try:
        return reference_rows(Path(search.reference), [])
    except tables_mod.AnalysisInputError as exc:
        raise SweepError(f"--reference {exc}") from None


def _design(record: CapacityRecord, k_levels: int) -> Design | None:
    """The design's figures from the reference level as measured (its scenarios, its
    baseline as the floor)."""
    ref = next((s for s in record.steps if s.decisions and s.decisions.scenarios), None)
    if ref is None:
        return None
    return plan.design(record.search, ref.decisions.scenarios, k_levels,
                       ref.decisions.baseline.mean, sims=200)


def _deterministic(config: SweepConfig) -> bool | None:
    """Whether the server serves batch-invariant: known for the GPU profiles the search
    starts itself (--set deterministic=true), not for a server it was pointed at."""
    if not (config.profile or "").startswith("gpu-"):
        return None
    return str(config.server_options.get("deterministic", "false")).lower() in (
        "true", "1", "yes")


def run_capacity(config: SweepConfig, search: CapacitySearch, sweep_dir: Path, *,
                 resume: bool = False) -> CapacityRecord:
    """Search in `sweep_dir` (new, or resumed); returns the finished record."""
    sweep_dir = sweep_dir.resolve()
    reference = _reference(search)  # a bad reference fails before any server starts
    if config.attempts < search.repeats:
        print(f"note: {search.repeats} repeats per scenario and level (--attempts "
              f"{config.attempts} raised): the noise floor needs them", flush=True)
        config = config.model_copy(update={"attempts": search.repeats})
    record = CapacityRecord(search=search, deterministic=_deterministic(config))
    started = time.perf_counter_ns()
    with open_sweep(config, sweep_dir, resume=resume,
                    resume_command="bankbench capacity --resume") as session:
        save_record(sweep_dir, record)
        ceiling = session.manifest.n_tasks * config.attempts
        if ceiling < search.max_level:
            print(f"note: levels above {ceiling} ({session.manifest.n_tasks} tasks x "
                  f"{config.attempts} attempts) add no load; the search stops there", flush=True)
        k_levels = levels_judgeable(search, ceiling)
        confidence = per_level_confidence(search.alpha, k_levels)
        while True:
            level, phase = next_level(record.steps, search, ceiling)
            if level is None:
                record.stopped_because = phase
                break
            reused = folder_state(level_dir(sweep_dir, level)) is \
                harbor_job.JobState.COMPLETE
            minutes = (time.perf_counter_ns() - started) / 60e9
            if not reused and search.max_minutes is not None and minutes >= search.max_minutes:
                record.stopped_because = "max_minutes"
                print(f"capacity: {minutes:.1f} min used of --max-minutes "
                      f"{search.max_minutes:g}; no new level started", flush=True)
                break
            print(f"capacity: {phase} level {level}", flush=True)
            t0 = time.perf_counter_ns()
            run_level(session, level)
            seconds = 0.0 if reused else (time.perf_counter_ns() - t0) / 1e9
            step = Evaluation(sweep_dir, search, reference).step(
                search, level, phase, reused, seconds, confidence)
            record.steps.append(step)
            record.capacity, record.lowest_failing = bracket(record.steps)
            record.boundary_high = boundary(record.steps, record.capacity)
            record.limiting = limiting(record.steps, record.lowest_failing)
            record.cliffs = cliffs(record.steps, search.max_drop)
            save_record(sweep_dir, record)
            print(f"capacity: level {level} {'passes' if step.passed else 'fails'}: "
                  f"{describe(step.checks)}", flush=True)
        record.design = _design(record, k_levels)
        record.finished = True
        save_record(sweep_dir, record)
        session.manifest.finished_at = datetime.now(UTC)
        save_manifest(sweep_dir, session.manifest)
    return record
