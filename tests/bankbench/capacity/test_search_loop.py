"""The search loop over hand-made levels (no server: `open_sweep` and the level runner's
`ensure_repeats` stand in, writing finished Harbor trials whose TTFT grows with the level, each
run of a level steady: its slots busy until it ends):
the reference level runs first, the search brackets and bisects to the frontier, records every
step, reuses complete levels when run again, runs an inconclusive level again with its repeats
doubled (and the reference's with it), and starts no level once --max-minutes has passed."""

from __future__ import annotations

import json
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest

from analysis.synthetic import T0, record, write_job, write_sweep_manifest, write_trial
from bankbench.capacity import run as run_mod
from bankbench.capacity.output import headline
from contracts.capacity import CAPACITY_FILE, CapacitySearch
from contracts.sweep import SweepConfig, level_dir

N_TASKS = 4
# four scenarios cannot certify a tight margin: a wide one, so latency decides
WIDE = {"max_divergence": 0.9, "alpha": 0.5}
SPAN_S = 600.0  # one run of a level


def _write(sweep: Path, level: int, repeats: int, first: int, hour: int,
           side_by_side: bool) -> None:
    """One run of `repeats` repeats of every task at concurrency `level`, starting at `hour`,
    as a steady level runs it: every slot busy until the run's end (its trials split the
    span evenly). Repeat-major, so a task's repeats never share a time; `side_by_side`
    queues them task-major instead, so they run at once in neighbouring slots."""
    job = level_dir(sweep, level)
    if not (job / "config.json").exists():
        write_job(job, level, n_total_trials=N_TASKS * repeats)
    order = [(i, k) for k in range(first, first + repeats) for i in range(N_TASKS)]
    if side_by_side:
        order.sort()
    slots = [order[j::level] for j in range(level)]
    for queue in slots:
        length = SPAN_S / len(queue) if queue else 0.0
        for position, (i, k) in enumerate(queue):
            name = f"banking-00{i}__{level}r{k}"
            start = T0 + timedelta(hours=hour, seconds=position * length)
            send = int(start.timestamp() * 1e9) + 1_000_000_000
            trial = write_trial(job, name, scenario_id=f"banking-00{i}", started_at=start,
                                phase_s=(0.0, 0.0, length, 0.0),
                                records=[record(trial_name=name, ttft_ms=100.0 * level,
                                                e2e_ms=100.0 * level + 5,
                                                start_unix_ns=send)],
                                rewards={"tsq": 1.0},
                                agent_status={"status": "ok", "reason": None})
            call = {"seq": 1, "attempt": 1, "tool": "get_account_balance",
                    "arguments": {"account_number": "1"}, "valid": True, "ts": 0.0}
            (trial / "verifier" / "intents.jsonl").write_text(json.dumps(call) + "\n")


@pytest.fixture
def fake_runner(tmp_path, monkeypatch):
    sweep = tmp_path / "cap"
    ran: list[tuple[int, int]] = []  # (level, repeats run)
    held: dict[int, int] = {}
    together: set[int] = set()  # levels whose first two repeats run side by side

    records: list[SimpleNamespace] = []

    @contextmanager
    def open_sweep(config, sweep_dir, *, resume=False, resume_command=""):
        if not resume:
            write_sweep_manifest(sweep_dir, config.levels)
        manifest = SimpleNamespace(n_tasks=N_TASKS, finished_at=None, level_records=records)
        yield SimpleNamespace(manifest=manifest, sweep_dir=sweep_dir)

    def ensure_repeats(session, level, repeats):
        held_now = next((r for r in records if r.level == level), None)
        if held_now is None:
            held_now = SimpleNamespace(level=level, passes=[])
            records.append(held_now)
        if not (level_dir(session.sweep_dir, level) / "config.json").exists():
            ran.append((level, 2))
            held[level] = 2
            _write(session.sweep_dir, level, 2, 0, 0, side_by_side=level in together)
        if repeats > held[level]:  # one more pass, its own run
            more = repeats - held[level]
            ran.append((level, more))
            _write(session.sweep_dir, level, more, held[level], 10 + held[level],
                   side_by_side=False)
            held[level] += more
            held_now.passes.append(more)
        return held_now

    monkeypatch.setattr(run_mod, "open_sweep", open_sweep)
    monkeypatch.setattr(run_mod, "ensure_repeats", ensure_repeats)
    monkeypatch.setattr(run_mod, "save_manifest", lambda *a: None)
    return sweep, ran, together


def test_reference_first_then_bracket_bisect_and_a_resume_that_reuses(fake_runner):
    sweep, ran, _ = fake_runner
    config = SweepConfig(levels=[1], profile="cpu-mocker")
    # levels 1-3 pass, 4 fails its latency bound
    search = CapacitySearch(slos={"ttft_p90_ms": 350}, max_looks=1, **WIDE)
    rec = run_mod.run_capacity(config, search, sweep)
    assert [lv for lv, _ in ran] == [2, 1, 4, 3]  # the reference (c2) first
    assert (rec.capacity, rec.lowest_failing, rec.stopped_because) == (3, 4, "bracketed")
    stored = json.loads((sweep / CAPACITY_FILE).read_text())
    assert stored["reference"] == "c2"
    assert [(s["level"], s["phase"], s["verdict"]) for s in stored["steps"]] == [
        (1, "bracket", "pass"), (2, "bracket", "pass"), (4, "bracket", "fail"),
        (3, "bisect", "pass")]
    assert stored["finished"] and stored["statistic"].startswith("divergence of decision")
    assert stored["limiting"] == ["ttft_p90_ms"] and stored["boundary_high"] == 4
    assert stored["design"]["repeats"] == 2 and stored["design"]["scenarios"] == N_TASKS
    decisions = stored["steps"][0]["decisions"]
    assert decisions["own"]["mean"] == 1.0 and decisions["divergence"]["mean"] == 0.0
    assert decisions["reference"] == "c2"

    again = run_mod.run_capacity(config, search, sweep, resume=True)
    assert [lv for lv, _ in ran] == [2, 1, 4, 3]  # nothing ran twice
    assert all(s.reused and s.seconds == 0 for s in again.steps)
    assert again.capacity == 3


def test_an_inconclusive_level_runs_again_with_its_repeats_doubled(fake_runner):
    """c4's two repeats ran side by side: no floor, so its decisions are inconclusive; a
    second pass an hour apart gives one, and c4 passes at its second look. The reference is
    brought to as many repeats."""
    sweep, ran, together = fake_runner
    together.add(4)
    config = SweepConfig(levels=[1], profile="cpu-mocker")
    search = CapacitySearch(slos={"ttft_p90_ms": 450}, max_level=4, max_looks=2, **WIDE)
    rec = run_mod.run_capacity(config, search, sweep)
    assert ran == [(2, 2), (1, 2), (4, 2), (4, 2), (2, 2)]
    c4 = next(s for s in rec.steps if s.level == 4)
    assert [look.outcome for look in c4.looks] == ["inconclusive", "intact"]
    assert [(look.repeats, look.reference_repeats) for look in c4.looks] == [(2, 2), (4, 4)]
    assert c4.verdict == "pass" and c4.repeats == 4
    assert rec.capacity == 4 and rec.inconclusive == []
    assert "repeats per level c1:2 c2:2 c4:4" in headline(rec)


def test_max_minutes_starts_no_new_level(fake_runner):
    sweep, ran, _ = fake_runner
    config = SweepConfig(levels=[1], profile="cpu-mocker")
    search = CapacitySearch(slos={"ttft_p90_ms": 350}, max_minutes=1e-9)
    rec = run_mod.run_capacity(config, search, sweep)
    assert [lv for lv, _ in ran] == [2]  # the reference only
    assert rec.stopped_because == "max_minutes" and rec.capacity is None
    assert headline(rec).startswith("no level was judged (--max-minutes stopped")
