"""Two sweeps against one server: the later one is told about the earlier (while it lives), a
sweep on another server or one that has ended is not named, and a dead sweep's record goes."""

from __future__ import annotations

import subprocess
import sys

from bankbench import sweep_neighbours
from contracts.cache import CACHE_ENV

URL = "http://gpu-node:8000/v1"


def test_the_later_sweep_is_warned_while_the_earlier_runs(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    assert sweep_neighbours.announce(URL, tmp_path / "a") == []
    # the same process stands in for a live other sweep: its pid and start time are real
    warned = sweep_neighbours.announce(URL + "/", tmp_path / "b")
    assert len(warned) == 1 and str(tmp_path / "a") in warned[0] and "WARNING" in warned[0]
    assert sweep_neighbours.announce("http://other:8000/v1", tmp_path / "c") == []
    sweep_neighbours.leave(tmp_path / "a")
    assert sweep_neighbours.others(URL, tmp_path / "b") == []


def test_a_killed_sweeps_record_is_ignored_and_removed(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    record = sweep_neighbours.RunningSweep(base_url=URL, sweep_dir=str(tmp_path / "dead"),
                                           pid=int(gone.stdout), started=1.0)
    folder = tmp_path / "cache" / "running-sweeps"
    folder.mkdir(parents=True)
    (folder / "dead.json").write_text(record.model_dump_json())
    assert sweep_neighbours.announce(URL, tmp_path / "new") == []
    assert not (folder / "dead.json").exists()
