"""The search loop over hand-made levels (no server: `open_sweep` and `run_level` stand in,
each "run" writing a finished Harbor job whose TTFT grows with the level): it brackets and
bisects to the frontier, records every step, reuses complete levels when run again, and
starts no level once --max-minutes has passed."""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest

from analysis.synthetic import record, write_job, write_sweep_manifest, write_trial
from bankbench.capacity import run as run_mod
from bankbench.capacity.output import headline
from contracts.capacity import CAPACITY_FILE, CapacitySearch
from contracts.sweep import SweepConfig, level_dir

N_TASKS = 4


def _write_level(sweep: Path, level: int) -> None:
    job = write_job(level_dir(sweep, level), level, n_total_trials=N_TASKS * 2)
    for i, repeat in ((i, r) for i in range(N_TASKS) for r in "ab"):
        name = f"banking-00{i}__{level}{repeat}"
        trial = write_trial(job, name, scenario_id=f"banking-00{i}",
                            records=[record(trial_name=name, ttft_ms=100.0 * level,
                                            e2e_ms=100.0 * level + 5)],
                            rewards={"tsq": 1.0}, agent_status={"status": "ok", "reason": None})
        call = {"seq": 1, "attempt": 1, "tool": "get_account_balance",
                "arguments": {"account_number": "1"}, "valid": True, "ts": 0.0}
        (trial / "verifier" / "intents.jsonl").write_text(json.dumps(call) + "\n")


@pytest.fixture
def fake_runner(tmp_path, monkeypatch):
    sweep = tmp_path / "cap"
    ran: list[int] = []

    @contextmanager
    def open_sweep(config, sweep_dir, *, resume=False, resume_command=""):
        if not resume:
            write_sweep_manifest(sweep_dir, config.levels)
        manifest = SimpleNamespace(n_tasks=N_TASKS, finished_at=None)
        yield SimpleNamespace(manifest=manifest, sweep_dir=sweep_dir)

    def run_level(session, level):
        if not (level_dir(session.sweep_dir, level) / "config.json").exists():
            ran.append(level)
            _write_level(session.sweep_dir, level)

    monkeypatch.setattr(run_mod, "open_sweep", open_sweep)
    monkeypatch.setattr(run_mod, "run_level", run_level)
    monkeypatch.setattr(run_mod, "save_manifest", lambda *a: None)
    return sweep, ran


def test_brackets_bisects_records_and_reuses_on_resume(fake_runner):
    sweep, ran = fake_runner
    config = SweepConfig(levels=[1], profile="cpu-mocker")
    # levels 1-3 pass, 4 fails; four scenarios that always agree: a wide margin lets
    # latency decide
    search = CapacitySearch(slos={"ttft_p90_ms": 350}, max_drop=0.5, alpha=0.5)
    record = run_mod.run_capacity(config, search, sweep)
    assert ran == [1, 2, 4, 3]
    assert (record.capacity, record.lowest_failing, record.stopped_because) == (3, 4,
                                                                                "bracketed")
    stored = json.loads((sweep / CAPACITY_FILE).read_text())
    assert [(s["level"], s["phase"], s["passed"]) for s in stored["steps"]] == [
        (1, "bracket", True), (2, "bracket", True), (4, "bracket", False), (3, "bisect", True)]
    assert stored["finished"]
    assert stored["limiting"] == ["ttft_p90_ms"] and stored["boundary_high"] == 4
    assert stored["design"]["repeats"] == 2 and stored["design"]["scenarios"] == N_TASKS
    decisions = stored["steps"][1]["decisions"]
    assert decisions["floor"]["mean"] == 1.0 and decisions["drop"]["mean"] == 0.0

    again = run_mod.run_capacity(config, search, sweep, resume=True)
    assert ran == [1, 2, 4, 3]  # nothing ran twice
    assert all(s.reused and s.seconds == 0 for s in again.steps)
    assert again.capacity == 3


def test_max_minutes_starts_no_new_level(fake_runner):
    sweep, ran = fake_runner
    config = SweepConfig(levels=[1], profile="cpu-mocker")
    search = CapacitySearch(slos={"ttft_p90_ms": 350}, max_minutes=1e-9)
    record = run_mod.run_capacity(config, search, sweep)
    assert ran == [] and record.stopped_because == "max_minutes" and record.capacity is None
    assert headline(record).startswith("no level was judged (--max-minutes stopped")
