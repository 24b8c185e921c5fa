"""`bankbench sweep --shards` end to end with real parts: the CLI as a subprocess, the real harbor
CLI (one process per shard), LocalEnvironment, the real Dynamo frontend with the mocker engine
(cpu-mocker), one server shared by the runs compared.

1. Level 4 as 2 shards x 2 against level 4 in one process, same tasks: every trial once in
   both, the same scenarios, the report's sections and summary columns the same, and the
   sharded level's achieved concurrency (the analysis definition, Σ e2e / wall-clock window)
   at least 0.75 of the one-process level's measured beside it. Not "near 4": on this 2-core
   machine shared with other work, the sandbox time between a trial's LLM calls keeps either
   run below 4 in flight; the comparison isolates what sharding adds. Both figures are
   printed (benchmarks/shards.py measures it at larger levels).
2. One shard's Harbor killed mid-level: the other shard finishes, the sweep fails naming the
   shard, and `--resume` runs only the killed shard's unfinished trials; every trial once.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.built_tasks import CHEAP_LABELS
from tests.support.cli import HARBOR_ENV, bankbench_here

pytestmark = [pytest.mark.dynamo, pytest.mark.harbor, pytest.mark.slow]


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[tuple[str, str]]:
    from bankbench.serve import api

    state = tmp_path_factory.mktemp("server")
    with api.running("cpu-mocker", workers=1, state_dir=state,
                     options={"speedup_ratio": 1.0}) as srv:
        yield srv.base_url, srv.model


def _sweep_args(server: tuple[str, str], out: Path, name: str, *more: str) -> list[str]:
    return ["sweep", "--base-url", server[0], "--model", server[1], "--source", "sample",
            "--labels", CHEAP_LABELS, "--out", str(out), "--name", name, "--no-plots", *more]


def _scenarios(level: Path) -> Counter:
    """Scenario of every finished trial of a level folder (any layout)."""
    from contracts.sweep import level_jobs

    found: Counter = Counter()
    for job in level_jobs(level):
        for result in job.glob("*/result.json"):
            data = json.loads(result.read_text())
            found[data["task_name"]] += 1
    return found


def _summary(sweep: Path) -> list[dict]:
    with (sweep / "summary.csv").open() as f:
        return list(csv.DictReader(f))


def _headings(sweep: Path) -> list[str]:
    lines = (sweep / "report.md").read_text().splitlines()
    return [ln for ln in lines if ln.startswith("#")][1:]  # the title names the sweep


def test_two_shards_of_two_run_a_level_of_four_like_one_process(tmp_path, server):
    common = ("--levels", "4", "--limit", "4")
    # both sweeps in this process: the test reads what they write and print
    one = bankbench_here(*_sweep_args(server, tmp_path, "one", *common))
    assert one.returncode == 0, one.stdout[-3000:] + one.stderr[-3000:]
    two = bankbench_here(*_sweep_args(server, tmp_path, "two", *common, "--shards", "2"))
    assert two.returncode == 0, two.stdout[-3000:] + two.stderr[-3000:]

    single, sharded = tmp_path / "one", tmp_path / "two"
    assert [p.name for p in sorted((sharded / "c4").iterdir()) if p.is_dir()] == ["s0", "s1"]
    records = [json.loads((sharded / "c4" / s / "shard.json").read_text())
               for s in ("s0", "s1")]
    assert [r["concurrency"] for r in records] == [2, 2]
    assert all(r["state"] == "complete" and r["host"] for r in records)
    assert not set(records[0]["tasks"]) & set(records[1]["tasks"])
    # Every trial once, the same trials as one process: 4 scenarios, one attempt each.
    assert _scenarios(single / "c4") == _scenarios(sharded / "c4")
    assert sorted(_scenarios(sharded / "c4").values()) == [1] * 4

    assert _headings(single) == _headings(sharded)
    a, b = _summary(single), _summary(sharded)
    assert list(a[0]) == list(b[0]) and len(a) == len(b) == 1
    assert float(b[0]["configured_concurrency"]) == 4.0
    assert float(b[0]["n_trials"]) == float(a[0]["n_trials"]) == 4.0
    one_c, two_c = float(a[0]["achieved_concurrency"]), float(b[0]["achieved_concurrency"])
    report = (sharded / "report.md").read_text()
    print(f"\nachieved concurrency at level 4: one process {one_c:.2f}, 2 shards x 2 "
          f"{two_c:.2f}\n" + report[report.index("## Achieved"):][:900])
    # A sanity bound, not the figure (benchmarks/shards.py measures it): the two sweeps run one
    # after the other on shared cores, so their achieved concurrency varies by ~10 % with
    # whatever else runs; shards that ran one after the other would give about half.
    assert two_c >= 0.75 * one_c
    assert "| s0 |" in report and "| s1 |" in report and "| all |" in report


def _shard_pid(level: Path, shard: str) -> int | None:
    try:
        return json.loads((level / shard / "shard.json").read_text()).get("pid")
    except (OSError, ValueError):
        return None


def test_a_killed_shard_loses_only_its_unfinished_trials_and_resume_completes_them(
        tmp_path, server):
    cmd = [sys.executable, "-m", "bankbench",
           *_sweep_args(server, tmp_path, "k", "--levels", "4", "--limit", "6", "--shards", "2")]
    log = tmp_path / "sweep.out"
    proc = subprocess.Popen(cmd, stdout=log.open("w"), stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, **HARBOR_ENV})
    level = tmp_path / "k" / "c4"
    deadline = time.monotonic() + 600
    # Kill shard 1's Harbor once one of its trials finished and others still run.
    while not (0 < len(list((level / "s1").glob("*/result.json"))) < 3
               and _shard_pid(level, "s1")):
        assert proc.poll() is None, log.read_text()[-3000:]
        assert time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.2)
    pid = _shard_pid(level, "s1")
    assert pid is not None
    os.killpg(pid, signal.SIGKILL)
    proc.wait(timeout=600)
    out = log.read_text()
    assert proc.returncode == 1, out[-3000:]
    assert "shard 1 (2 of 4)" in out
    s0 = json.loads((level / "s0" / "shard.json").read_text())
    s1 = json.loads((level / "s1" / "shard.json").read_text())
    assert s0["state"] == "complete" and s1["state"] == "failed"
    kept = {p.parent.name for p in (level / "s0").glob("*/result.json")}
    assert len(kept) == 3

    done = bankbench_here("sweep", "--resume", str(tmp_path / "k"), "--no-plots")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "shard 0: already complete" in done.stdout
    assert {p.parent.name for p in (level / "s0").glob("*/result.json")} == kept
    assert sorted(_scenarios(level).values()) == [1] * 6
    assert json.loads((level / "s1" / "shard.json").read_text())["state"] == "complete"
