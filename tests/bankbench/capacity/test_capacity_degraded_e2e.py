"""`bankbench capacity` end to end on decisions that break under load, with real parts: the CLI
as a subprocess, the real harbor CLI, LocalEnvironment, the real Dynamo frontend with the mocker
engine (cpu-mocker, speed-up 1), replies scripted through response-replay traces so agents make
real tool calls, and the FAULT-INJECTING TEST PROXY (tests/support/fault_proxy.py) between them,
degrading replies of requests in flight together with more than two (themselves included):
decisions drop where load crosses that, and the search stops below it. The search starts at the
reference, c2 (c1 runs its trials one at a time: as long as two batched levels together), and
climbs to c3, its top, the first level that crosses it (c4 above it adds only a bisect back to
c3). Without figures (--no-plots): none is written.

Divergence that grows above a load with valid, other tool calls (every session starting among
more than two in flight switched to a third tool) is shown up to c8 by `benchmarks/capacity.py
--diverge-above 2`: six scenarios need levels up to c8 to show it, many minutes of search; the
search loop's stop on a decision drop above a level is simulated in test_simulation.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.support.cli import bankbench
from tests.support.scripted_decisions import N_SCENARIOS, REPLAY_AK, scripted_mocker

pytestmark = [pytest.mark.dynamo, pytest.mark.harbor, pytest.mark.slow]


@pytest.fixture
def degrading_proxy(tmp_path) -> Iterator[tuple]:
    from tests.support.fault_proxy import FaultSchedule

    with scripted_mocker(tmp_path, FaultSchedule(degrade_above=2)) as found:
        yield found


def test_degraded_replies_under_load_stop_the_search_below_that_load(tmp_path,
                                                                     degrading_proxy):
    base_url, model, proxy = degrading_proxy
    done = bankbench(
        "capacity", "--base-url", base_url, "--model", model, "--source", "sample",
        "--limit", str(N_SCENARIOS), "--slo", "error_rate=0.5", "--max-level", "3",
        # from the reference up: c1 runs its trials one at a time, as long as two levels above
        "--start", "2",
        "--max-divergence", "0.5", "--alpha", "0.5", "--max-looks", "1", "--ak", REPLAY_AK,
        "--no-plots", "--out", str(tmp_path), "--name", "cap", timeout=900)
    out = done.stdout
    assert done.returncode == 0, out[-3000:] + done.stderr[-3000:]
    record = json.loads((tmp_path / "cap" / "capacity.json").read_text())
    by_level = {s["level"]: s for s in record["steps"]}
    assert proxy.degraded > 0
    # Level 2 never puts more than two requests in flight: nothing degraded, the same calls
    # as the reference. Three concurrent agents do, and their decisions change.
    assert [s["level"] for s in record["steps"]] == [2, 3]
    assert by_level[2]["passed"]
    assert not by_level[3]["passed"]
    check = {c["name"]: c for c in by_level[3]["checks"]}["tool_f1_divergence"]
    assert not check["passed"] and check["bound"] > 0.5
    assert (by_level[3]["decisions"]["divergence"]["mean"]
            > by_level[2]["decisions"]["divergence"]["mean"])
    assert record["capacity"] == 2 and record["lowest_failing"] == 3
    # after the warning six scenarios earn (below the validated design), the answer
    assert out.strip().splitlines()[-1].startswith(
        f"Below the validated design: 6 scenarios (the error rates of docs/capacity.md hold "
        f"from 50) — {record['capacity']} concurrent agents")
    # the level table and the consistency section say what changed
    table = (tmp_path / "cap" / "consistency.csv").read_text()
    assert "malformed" in table and "truncated" in table
    assert (tmp_path / "cap" / "report.md").is_file()
    assert not (tmp_path / "cap" / "capacity.png").exists()
    assert not list((tmp_path / "cap").rglob("*.png"))
