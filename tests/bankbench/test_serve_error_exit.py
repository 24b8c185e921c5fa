"""A server that will not start ends `bankbench sweep` and `bankbench capacity` with one line
and exit 1, caught as a ServeError; any other error is not taken for one."""

from __future__ import annotations

import pytest

from bankbench.cli import main
from bankbench.serve.errors import ServeError
from bankbench.sweep.manifest import save_manifest
from contracts.sweep import SweepConfig, SweepManifest


def _sweep_dir(tmp_path):
    config = SweepConfig(levels=[1], profile="cpu-mocker")
    save_manifest(tmp_path, SweepManifest(
        name="s", config=config, fingerprint=config.fingerprint(), levels=config.levels,
        attempts=config.attempts, server_profile=None, base_url="http://127.0.0.1:9/v1",
        model="m", tasks_dir="t", n_tasks=1, started_at="2026-01-01T00:00:00Z"))
    return tmp_path


def _raising(error: Exception):
    def run(*args, **kwargs):
        raise error
    return run


@pytest.fixture(autouse=True)
def _keep_pytests_signal_handlers(monkeypatch):
    from bankbench.commands import sweep as command

    monkeypatch.setattr(command, "_stop_cleanly_on_signals", dict)


def test_sweep_names_the_server_that_did_not_start(tmp_path, monkeypatch, capsys):
    from bankbench.sweep import runner

    failed = ServeError("cpu-mocker: port 9 is taken", component="frontend")
    monkeypatch.setattr(runner, "run_sweep", _raising(failed))
    assert main(["sweep", "--resume", str(_sweep_dir(tmp_path))]) == 1
    assert capsys.readouterr().err.strip() == (
        "bankbench sweep: server failed to start: cpu-mocker: port 9 is taken")
    monkeypatch.setattr(runner, "run_sweep", _raising(RuntimeError("a bug")))
    with pytest.raises(RuntimeError, match="a bug"):
        main(["sweep", "--resume", str(tmp_path)])


def test_capacity_names_the_server_that_did_not_start(tmp_path, monkeypatch, capsys):
    from bankbench.capacity import run

    monkeypatch.setattr(run, "load_record", lambda sweep_dir: type(
        "Record", (), {"search": type("Search", (), {"reference": None})()})())
    monkeypatch.setattr(run, "run_capacity", _raising(ServeError("cpu-tiny: no wheel")))
    assert main(["capacity", "--resume", str(_sweep_dir(tmp_path))]) == 1
    assert capsys.readouterr().err.strip() == (
        "bankbench capacity: server failed to start: cpu-tiny: no wheel")
