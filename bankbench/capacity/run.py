"""`run_capacity`: bracket then bisect concurrency inside one sweep directory, judging each
level from its files (latency SLOs from analysis.summary, decision consistency from
analysis.consistency), recording every step in capacity.json.

Levels run through the sweep runner's own machinery (`open_sweep` / `run_level`): a complete
level is reused, a partial one continued, so an interrupted search resumes where it stopped.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from analysis import tables as tables_mod
from analysis.consistency import consistency_table, read_decisions
from analysis.metrics.goodput import SLO
from analysis.summary import summarize
from bankbench.capacity.search import bracket, describe, judge, next_level
from bankbench.sweep import harbor_job
from bankbench.sweep.runner import (
    SweepError,
    load_model,
    open_sweep,
    run_level,
    save_manifest,
    save_model,
)
from contracts.capacity import (
    CAPACITY_FILE,
    CapacityRecord,
    CapacitySearch,
    CapacityStep,
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
        decisions = read_decisions(tables).frame
        self.reference_level = None if reference is not None or decisions.empty \
            else int(decisions["level"].min())
        self.consistency = (consistency_table(decisions, reference) if len(decisions)
                            else pd.DataFrame())

    def step(self, search: CapacitySearch, level: int, phase: str, reused: bool,
             seconds: float) -> CapacityStep:
        summary_row = self.summary[self.summary["level"] == level].iloc[0]
        requests = self.requests[self.requests["level"] == level]
        found = (self.consistency[self.consistency["level"] == level]
                 if len(self.consistency) else self.consistency)
        row = found.iloc[0] if len(found) else None
        checks = judge(search, summary_row, requests, row, level == self.reference_level)
        return CapacityStep(level=level, phase=phase, passed=all(c.passed for c in checks),
                            reused=reused, checks=checks, seconds=seconds,
                            at=datetime.now(UTC))


def _reference(search: CapacitySearch) -> pd.DataFrame | None:
    if search.reference is None:
        return None
    frame = read_decisions(tables_mod.load(Path(search.reference))).frame
    if frame.empty:
        raise SweepError(f"--reference {search.reference}: no finished trials in it")
    return frame[frame["level"] == frame["level"].min()]


def run_capacity(config: SweepConfig, search: CapacitySearch, sweep_dir: Path, *,
                 resume: bool = False) -> CapacityRecord:
    """Search in `sweep_dir` (new, or resumed); returns the finished record."""
    sweep_dir = sweep_dir.resolve()
    reference = _reference(search)  # a bad reference fails before any server starts
    record = CapacityRecord(search=search)
    started = time.perf_counter_ns()
    with open_sweep(config, sweep_dir, resume=resume,
                    resume_command="bankbench capacity --resume") as session:
        save_record(sweep_dir, record)
        ceiling = session.manifest.n_tasks * config.attempts
        if ceiling < search.max_level:
            print(f"note: levels above {ceiling} ({session.manifest.n_tasks} tasks x "
                  f"{config.attempts} attempts) add no load; the search stops there", flush=True)
        while True:
            level, phase = next_level(record.steps, search, ceiling)
            if level is None:
                record.stopped_because = phase
                break
            reused = harbor_job.job_state(level_dir(sweep_dir, level)) is \
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
                search, level, phase, reused, seconds)
            record.steps.append(step)
            record.capacity, record.lowest_failing = bracket(record.steps)
            save_record(sweep_dir, record)
            print(f"capacity: level {level} {'passes' if step.passed else 'fails'}: "
                  f"{describe(step.checks)}", flush=True)
        record.finished = True
        save_record(sweep_dir, record)
        session.manifest.finished_at = datetime.now(UTC)
        save_manifest(sweep_dir, session.manifest)
    return record
