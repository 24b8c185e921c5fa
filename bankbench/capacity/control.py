"""`--control deterministic`: the judged levels run once more on a batch-invariant server, and
each level's divergence is split, scenario by scenario, into what batch-dependent numerics add
and what load changes without them (scheduling, time-outs, truncation).

The control arm is an ordinary sweep directory inside the search's, `<sweep>/control/`
(sweep.json, `c<level>/`), run after the search on the same tasks: on a GPU profile the search
starts the profile again with `deterministic=true` (vLLM's batch-invariant kernels, SGLang's
deterministic inference); elsewhere `--control-base-url` names a batch-invariant server the
user runs. Per judged level L and scenario s:

    total_s      = divergence of production L from production reference
    scheduling_s = divergence of control L from control reference
    numerics_s   = total_s - scheduling_s

With batch-invariant kernels a temperature-0 reply no longer depends on what else is in the
batch, so what still diverges there is load itself; the rest of the production divergence is
numerics. Means over scenarios with 95 % intervals.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import tables as tables_mod
from analysis.consistency import level_scenarios, read_decisions
from analysis.decision_noise import mean_interval
from bankbench.sweep.errors import SweepError
from contracts.capacity import CapacityRecord, CapacitySearch, ControlSplit, Interval
from contracts.sweep import SweepConfig

CONTROL_DIR = "control"


def control_config(config: SweepConfig, search: CapacitySearch, tasks_dir: Path | None,
                   model: str | None) -> SweepConfig:
    """The control arm's sweep: the same tasks, agent and levels, on the batch-invariant
    server (`model`: the served model's name). Raises SweepError when there is none to
    run."""
    fields: dict[str, object] = {"tasks": str(tasks_dir) if tasks_dir else config.tasks}
    if search.control_base_url:
        fields.update(base_url=search.control_base_url, profile=None, router=None,
                      workers=None, server_options={}, model=config.model or model)
    elif (config.profile or "").startswith("gpu-"):
        fields["server_options"] = {**config.server_options, "deterministic": "true"}
    else:
        raise SweepError("--control deterministic needs a GPU profile (the search starts it "
                         "again batch-invariant) or --control-base-url URL (a batch-invariant "
                         "server you run)")
    return config.model_copy(update=fields)


def _interval(values: list[float]) -> Interval:
    mean, low, high = mean_interval(values, -2.0, 2.0)

    def clean(v: float) -> float | None:
        return None if math.isnan(v) else v

    return Interval(mean=clean(mean), low=clean(low), high=clean(high))


def split(main: pd.DataFrame, control: pd.DataFrame, level: int, reference_level: int,
          metric: str) -> ControlSplit | None:
    """The paired split at one level (decision frames of analysis.consistency)."""
    def per_scenario(frame: pd.DataFrame) -> dict[str, float]:
        at, ref = frame[frame["level"] == level], frame[frame["level"] == reference_level]
        if at.empty or ref.empty:
            return {}
        return {s.scenario_id: s.divergence for s in level_scenarios(
            at, ref, metric, is_reference=level == reference_level)}

    total, scheduling = per_scenario(main), per_scenario(control)
    paired = [sid for sid in total if sid in scheduling
              and not (np.isnan(total[sid]) or np.isnan(scheduling[sid]))]
    if not paired:
        return None
    return ControlSplit(
        total=_interval([total[s] for s in paired]),
        scheduling=_interval([scheduling[s] for s in paired]),
        numerics=_interval([total[s] - scheduling[s] for s in paired]),
        scenarios=len(paired))


def attach_splits(record: CapacityRecord, sweep_dir: Path, reference_level: int) -> None:
    """Each judged step's split from the search's sweep and its control arm."""
    main = read_decisions(tables_mod.load(sweep_dir)).frame
    control = read_decisions(tables_mod.load(sweep_dir / CONTROL_DIR)).frame
    for step in record.steps:
        step.control = split(main, control, step.level, reference_level,
                             record.search.agreement_metric)


def run_control(config: SweepConfig, search: CapacitySearch, sweep_dir: Path,
                record: CapacityRecord, reference_level: int, tasks_dir: Path, model: str
                ) -> None:
    """Every judged level and the reference on the batch-invariant server, each with as many
    repeats as the search's last look at it had; then the splits."""
    from bankbench.sweep import runner
    from bankbench.sweep.level_run import ensure_repeats

    arm = sweep_dir / CONTROL_DIR
    levels = sorted({reference_level, *(s.level for s in record.steps)})
    repeats = {s.level: s.repeats or search.repeats for s in record.steps}
    repeats[reference_level] = max(repeats.get(reference_level, search.repeats),
                                   *(look.reference_repeats for s in record.steps
                                     for look in s.looks))
    cfg = control_config(config, search, tasks_dir, model)
    with runner.open_sweep(cfg.model_copy(update={"levels": levels}), arm,
                           resume=(arm / "sweep.json").is_file(),
                           resume_command="bankbench capacity --resume") as session:
        for level in levels:
            print(f"capacity: control arm (batch-invariant) level {level}", flush=True)
            ensure_repeats(session, level, repeats[level])
    attach_splits(record, sweep_dir, reference_level)
