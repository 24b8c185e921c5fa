"""`--control deterministic`: which server the control arm runs on (refused where there is
none), and the paired split of a level's divergence into numerics and the rest, on hand-made
sweeps with known answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from bankbench.capacity.control import CONTROL_DIR, attach_splits, control_config
from bankbench.sweep.errors import SweepError
from contracts.capacity import CapacityRecord, CapacitySearch, CapacityStep
from contracts.sweep import SweepConfig
from tests.support.consistency_sweeps import BAL, FREEZE, XFER, calls_sweep

SEARCH = CapacitySearch(control="deterministic")


def test_the_control_arm_runs_on_a_batch_invariant_server_or_is_refused():
    gpu = SweepConfig(levels=[1], profile="gpu-vllm", server_options={"tp": "2"})
    arm = control_config(gpu, SEARCH, Path("/t"), "m")
    assert arm.server_options == {"tp": "2", "deterministic": "true"} and arm.tasks == "/t"
    cpu = SweepConfig(levels=[1], profile="cpu-mocker")
    with pytest.raises(SweepError, match="needs a GPU profile .* or --control-base-url"):
        control_config(cpu, SEARCH, None, None)
    given = SEARCH.model_copy(update={"control_base_url": "http://h:9/v1"})
    arm = control_config(cpu, given, Path("/t"), "served")
    assert (arm.base_url, arm.profile, arm.model) == ("http://h:9/v1", None, "served")


def _level(calls: dict[int, list]) -> dict:
    """Scenario i's two repeats both make calls[i]."""
    return {f"banking-00{i}__{r}": {"calls": c} for i, c in calls.items() for r in "ab"}


def test_the_split_is_paired_by_scenario(tmp_path):
    """At c8 in production, scenarios 0 and 1 switch (XFER -> FREEZE: F1 0.5 each); on the
    batch-invariant server only scenario 0 does. Per scenario: total (0.5, 0.5, 0, 0),
    scheduling (0.5, 0, 0, 0), numerics (0, 0.5, 0, 0)."""
    usual = {i: [BAL, XFER] for i in range(4)}
    switched = {**usual, 0: [BAL, FREEZE], 1: [BAL, FREEZE]}
    main = calls_sweep(tmp_path / "cap", {2: _level(usual), 8: _level(switched)})
    calls_sweep(main / CONTROL_DIR, {2: _level(usual), 8: _level({**usual, 0: [BAL, FREEZE]})})
    steps = [CapacityStep(level=lv, phase="bracket", passed=True, reused=False, checks=[],
                          seconds=0, at="2026-01-01T00:00:00Z") for lv in (2, 8)]
    record = CapacityRecord(search=SEARCH, steps=steps)
    attach_splits(record, main, 2)
    c2, c8 = (s.control for s in record.steps)
    assert c2.total.mean == 0.0 and c2.scenarios == 4
    assert (c8.total.mean, c8.scheduling.mean, c8.numerics.mean) == pytest.approx(
        (0.25, 0.125, 0.125))
    assert c8.numerics.low < c8.numerics.mean < c8.numerics.high
