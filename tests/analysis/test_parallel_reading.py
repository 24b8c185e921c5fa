"""Trials read by a process pool give exactly the tables one process gives, and stay lenient."""

from __future__ import annotations

import pandas as pd

from analysis import trial_rows
from analysis.synthetic import synthetic_sweep
from analysis.tables import load


def _load(path, monkeypatch, parallel_from: int, chunk: int = 3):
    monkeypatch.setattr(trial_rows, "PARALLEL_FROM", parallel_from)
    monkeypatch.setattr(trial_rows, "CHUNK", chunk)
    monkeypatch.setattr(trial_rows.os, "cpu_count", lambda: 2)
    return load(path)


def test_parallel_reading_equals_serial_reading(tmp_path, monkeypatch):
    sweep = synthetic_sweep(tmp_path / "sweep", [1, 2], trials_per_level=7,
                            requests_per_trial=3, itl_per_request=4)
    bad = next((sweep / "c2").glob("banking-*")) / "agent" / "llm_calls.jsonl"
    bad.write_text(bad.read_text() + '{"request_id": "half')  # a trial still being written
    serial = _load(sweep, monkeypatch, parallel_from=10_000)
    parallel = _load(sweep, monkeypatch, parallel_from=0)
    for name in ("trials", "requests", "itl", "jobs", "issues"):
        pd.testing.assert_frame_equal(getattr(serial, name), getattr(parallel, name))
    assert len(parallel.trials) == 14 and len(parallel.issues) >= 1


def test_a_trial_whose_reading_fails_costs_only_that_trial(tmp_path, monkeypatch):
    sweep = synthetic_sweep(tmp_path / "sweep", [1], trials_per_level=4, requests_per_trial=1)
    victim = sorted((sweep / "c1").glob("banking-*"))[1]
    real = trial_rows._read_trial

    def flaky(task, rows, issues):
        if task.trial_dir == victim:
            raise RuntimeError("disk on fire")
        real(task, rows, issues)

    monkeypatch.setattr(trial_rows, "_read_trial", flaky)  # in-process: what a worker runs
    tables = _load(sweep, monkeypatch, parallel_from=10_000)
    # Never dropped: the trial it could not read stands in the table, out of quality, saying
    # why; the others are read as ever.
    assert len(tables.trials) == 4
    row = tables.trials.set_index("trial").loc[victim.name]
    assert row.status == "harness_failed" and "disk on fire" in row.status_reason
    assert not row.in_quality
    assert (tables.trials.drop(columns="status").set_index("trial").drop(victim.name)
            .notna().any(axis=None))
    assert tables.issues["message"].str.contains("disk on fire").any()
