"""`run_capacity`: the search loop (bankbench/capacity/sequential.py) on real levels inside one
sweep directory. Each level runs as an ordinary sweep level (`open_sweep` / `ensure_repeats`: a
complete level is reused, a partial one continued, so an interrupted search resumes where it
stopped) and is judged from its files: latency SLOs from analysis.summary, decisions against
the reference's from analysis.consistency / analysis.decision_noise. Every step, the boundary,
the limiting checks, inconclusive levels, cliffs and the design are recorded in capacity.json.
"""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
from harbor.models.trial.paths import TrialPaths

from analysis import tables as tables_mod
from analysis.consistency import level_scenarios, read_decisions, reference_rows
from analysis.integrity import level_table as integrity_table
from analysis.integrity import worse_levels
from analysis.metrics.goodput import SLO
from analysis.metrics.host import HOST_BUSY, OTHER_CPU
from analysis.summary import summarize
from analysis.windows import MIN_ACHIEVED_SHARE, certifiable
from bankbench.capacity import control, plan
from bankbench.capacity.checks import achieved_check, level_step, slo_value
from bankbench.capacity.output import saturation_line
from bankbench.capacity.search import describe, levels_judgeable
from bankbench.capacity.sequential import search_loop
from bankbench.sweep import harbor_job
from bankbench.sweep.errors import SweepError
from bankbench.sweep.level import folder_state
from bankbench.sweep.level_run import ensure_repeats
from bankbench.sweep.manifest import load_model, save_manifest, save_model
from bankbench.sweep.output_dir import OutputDir, locked_output
from bankbench.sweep.runner import open_sweep
from bankbench.sweep.session import SweepSession
from contracts.capacity import (
    CAPACITY_FILE,
    CapacityRecord,
    CapacitySearch,
    CapacityStep,
)
from contracts.sweep import SWEEP_FILE, SweepConfig, level_dir


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
        limits = [v for n, v in search.tier_list()[0].slos.items()
                  if n.startswith(stem + "_p")]
        if limits:
            bounds[key] = min(limits) / (1000.0 if key == "e2e_s" else 1.0)
    return SLO(**bounds) if bounds else None


def _known(value: object) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


def _repeats_held(frame: pd.DataFrame) -> int:
    """Repeats per scenario a level holds (the median over its scenarios: a lost trial was
    still run)."""
    if frame.empty:
        return 0
    return int(frame.groupby("scenario_id").size().median())


def integrity_worse(requests: pd.DataFrame) -> dict[int, list[str]]:
    """Level -> the tool-call integrity classes worse there than at the lowest level beyond
    noise (analysis/integrity.py; the level table's own Holm family over the levels so far)."""
    out: dict[int, list[str]] = {}
    for (_, level), classes in worse_levels(integrity_table(requests)).items():
        have = out.setdefault(level, [])
        have += [c for c in classes if c not in have]
    return out


class Evaluation:
    """Everything one look needs, read once from the sweep directory."""

    def __init__(self, sweep_dir: Path, search: CapacitySearch,
                 reference: pd.DataFrame | None, reference_level: int | None) -> None:
        tables = tables_mod.load(sweep_dir)
        self.summary = summarize(tables, goodput_slo(search))
        self.requests = tables.requests
        self.decisions = read_decisions(tables).frame
        self.integrity_worse = integrity_worse(self.requests)
        self.reference_level = reference_level
        if reference is None and reference_level is not None and len(self.decisions):
            reference = self.decisions[self.decisions["level"] == reference_level]
        self.reference = reference

    def at(self, level: int) -> pd.DataFrame:
        return (self.decisions[self.decisions["level"] == level] if len(self.decisions)
                else self.decisions)

    def step(self, search: CapacitySearch, level: int, phase: str,
             confidence: tuple[float, float], reference: str, reused: bool,
             seconds: float) -> CapacityStep:
        summary_row = self.summary[self.summary["level"] == level].iloc[0]
        requests = self.requests[self.requests["level"] == level]
        at = self.at(level)
        lost = float(at["lost"].mean()) if len(at) else math.nan
        slo_values = {name: slo_value(name, summary_row, requests, lost)
                      for name in search.slo_names()}
        is_reference = level == self.reference_level
        scenarios = (level_scenarios(at, self.reference, search.agreement_metric, is_reference)
                     if len(at) and self.reference is not None else [])
        tsq = summary_row.get("tsq_mean")
        achieved = summary_row.get("achieved_trial_concurrency")
        # certified only at steady state, its slots busy enough over the measured window
        bound = (MIN_ACHIEVED_SHARE if search.min_achieved_share is None
                 else search.min_achieved_share)
        share = summary_row.get("achieved_trial_share")
        held = achieved_check(None if share is None or pd.isna(share) else float(share),
                              bound, certifiable(summary_row, bound))
        ref_repeats = _repeats_held(self.reference) if self.reference is not None else 0
        step = level_step(
            search, level, phase, confidence, slo_values=slo_values, scenarios=scenarios,
            is_reference=is_reference, reference=reference, repeats=_repeats_held(at),
            reference_repeats=ref_repeats, tsq=None if tsq is None else float(tsq),
            extra=[held], reused=reused, seconds=seconds,
            achieved=None if achieved is None or pd.isna(achieved) else float(achieved))
        step.integrity_worse = self.integrity_worse.get(level, [])
        step.host_cpu_busy = _known(summary_row.get(HOST_BUSY.key))
        step.host_other_cpu = _known(summary_row.get(OTHER_CPU.key))
        return step


def _files_judged(sweep_dir: Path) -> tuple:
    """What an Evaluation's reading depends on, cheaply: the manifest, and each trial's
    result.json, which Harbor writes last (a trial run, rerun or removed changes this). A look
    at a level that ran nothing new (a resumed search's finished levels) reuses the last
    Evaluation instead of reading and summarizing every level again (~0.5-1 CPU-s a look)."""
    out = []
    results = sorted(sweep_dir.rglob(TrialPaths(sweep_dir).result_path.name))
    for path in (sweep_dir / SWEEP_FILE, *results):
        try:
            stat = path.stat()
        except OSError:
            continue
        out.append((str(path), stat.st_mtime_ns, stat.st_size))
    return tuple(out)


class SweepLevels:
    """The search's levels as sweep levels of one session (a LevelSource)."""

    def __init__(self, session: SweepSession, search: CapacitySearch,
                 reference: pd.DataFrame | None, reference_level: int | None,
                 reference_name: str) -> None:
        self.session, self.search = session, search
        self.external_reference = reference
        self.reference_level = reference_level
        self.reference_name = reference_name
        self.seconds: dict[int, float] = {}
        self.reused: dict[int, bool] = {}
        self._evaluation: Evaluation | None = None
        self._judged: tuple = ()  # _files_judged when the Evaluation was read

    @property
    def evaluation(self) -> Evaluation:
        files = _files_judged(self.session.sweep_dir)
        if self._evaluation is None or files != self._judged:
            self._evaluation = Evaluation(self.session.sweep_dir, self.search,
                                          self.external_reference, self.reference_level)
            self._judged = files
        return self._evaluation

    def _passes(self, level: int) -> int:
        held = [r for r in self.session.manifest.level_records if r.level == level]
        return len(held[0].passes) if held else 0

    def ensure(self, level: int, repeats: int) -> None:
        t0 = time.perf_counter_ns()
        if level not in self.reused:
            self.reused[level] = folder_state(
                level_dir(self.session.sweep_dir, level)) is harbor_job.JobState.COMPLETE
        before = self._passes(level)
        record = ensure_repeats(self.session, level, repeats)
        if len(record.passes) > before:  # a pass of more repeats ran
            self.reused[level] = False
        self.seconds[level] = self.seconds.get(level, 0.0) + (
            0.0 if self.reused[level] else (time.perf_counter_ns() - t0) / 1e9)

    def repeats(self, level: int) -> int:
        return _repeats_held(self.evaluation.at(level))

    def judge(self, level: int, phase: str, confidence: tuple[float, float]) -> CapacityStep:
        return self.evaluation.step(self.search, level, phase, confidence, self.reference_name,
                                    self.reused.get(level, False), self.seconds.get(level, 0.0))


def _external_reference(search: CapacitySearch) -> tuple[pd.DataFrame | None, str | None]:
    if search.reference is None:
        return None, None
    try:
        frame = reference_rows(Path(search.reference), [], search.reference_level)
    except tables_mod.AnalysisInputError as exc:
        raise SweepError(f"--reference {exc}") from None
    return frame, f"{Path(search.reference).name}/c{int(frame['level'].min())}"


def _deterministic(config: SweepConfig) -> bool | None:
    """Whether the server serves batch-invariant: known for the GPU profiles the search
    starts itself (--set deterministic=true), not for a server it was pointed at."""
    if not (config.profile or "").startswith("gpu-"):
        return None
    return str(config.server_options.get("deterministic", "false")).lower() in (
        "true", "1", "yes")


def run_capacity(config: SweepConfig, search: CapacitySearch, sweep_dir: Path, *,
                 resume: bool = False) -> CapacityRecord:
    """Search in `sweep_dir` (new, or resumed); returns the finished record. The directory
    is locked until the record is final, the control arm's run included."""
    with locked_output(sweep_dir, resume=resume) as out:
        return _search(config, search, out, resume=resume)


def _search(config: SweepConfig, search: CapacitySearch, out: OutputDir, *,
            resume: bool) -> CapacityRecord:
    sweep_dir = out.path
    reference, reference_name = _external_reference(search)  # fails before a server starts
    if config.attempts < search.repeats:
        print(f"note: {search.repeats} repeats per scenario and level (--attempts "
              f"{config.attempts} raised): the statistic needs them", flush=True)
        config = config.model_copy(update={"attempts": search.repeats})
    if search.control == "deterministic":
        control.control_config(config, search, None, config.model)  # refused before anything runs
    record = CapacityRecord(search=search, deterministic=_deterministic(config))
    started = time.perf_counter_ns()
    with open_sweep(config, sweep_dir, resume=resume,
                    resume_command="bankbench capacity --resume") as session:
        save_record(sweep_dir, record)
        out.keep()
        ceiling = session.manifest.n_tasks * config.attempts
        if ceiling < search.max_level:
            print(f"note: levels above {ceiling} ({session.manifest.n_tasks} tasks x "
                  f"{config.attempts} attempts) add no load; the search stops there", flush=True)
        top = min(search.max_level, ceiling)
        early = plan.verdict(plan.design(search, session.manifest.n_tasks,
                                         levels_judgeable(search, ceiling)),
                             search.max_divergence)
        if early:
            print(f"note: {early}; this search shows the method at work, it cannot certify "
                  "decisions", flush=True)
        reference_level = None if reference is not None else min(search.reference_level, top)
        record.reference = reference_name or f"c{reference_level}"
        source = SweepLevels(session, search, reference, reference_level, record.reference)

        def may_start(level: int) -> bool:
            minutes = (time.perf_counter_ns() - started) / 60e9
            if search.max_minutes is None or minutes < search.max_minutes or \
                    folder_state(level_dir(sweep_dir, level)) is \
                    harbor_job.JobState.COMPLETE:
                print(f"capacity: level {level}", flush=True)
                return True
            print(f"capacity: {minutes:.1f} min used of --max-minutes "
                  f"{search.max_minutes:g}; no new level started", flush=True)
            return False

        def on_step(step: CapacityStep) -> None:
            save_record(sweep_dir, record)
            verdict = {"pass": "passes", "fail": "fails",
                       "inconclusive": "is inconclusive"}[step.verdict]
            print(f"capacity: level {step.level} {verdict} ({step.repeats} repeats): "
                  f"{describe(step.checks)}", flush=True)
            if warning := saturation_line([step]):
                print(f"capacity: {warning}", flush=True)

        search_loop(search, ceiling, source, record, reference_level=reference_level,
                    may_start=may_start, on_step=on_step,
                    on_look=lambda level, why: print(f"capacity: level {level}: {why}",
                                                     flush=True))
        record.design = _design(record, levels_judgeable(search, ceiling))
        save_record(sweep_dir, record)
        session.manifest.finished_at = datetime.now(UTC)
        save_manifest(sweep_dir, session.manifest)
        arm = ((session.tasks_dir, session.model) if search.control == "deterministic"
               else None)
    if arm is not None and reference_level is not None:
        # after the search's own server is down: the control arm may need the same GPUs
        control.run_control(config, search, sweep_dir, record, reference_level, *arm)
        record.reference = f"{record.reference} (control arm: {control.CONTROL_DIR}/)"
    record.finished = True
    save_record(sweep_dir, record)
    return record


def _design(record: CapacityRecord, k_levels: int):
    """The design's figures for the scenarios the reference compared."""
    ref = next((s for s in record.steps if s.decisions and s.decisions.scenarios), None)
    if ref is None:
        return None
    return plan.design(record.search, ref.decisions.scenarios, k_levels)
