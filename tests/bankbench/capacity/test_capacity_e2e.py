"""`bankbench capacity` end to end with real parts: the CLI as a subprocess, the real harbor
CLI, LocalEnvironment, the real Dynamo frontend with the mocker engine (cpu-mocker).

Replies are scripted through mocker response-replay traces, so agents make real tool calls.

1. A search with an SLO finds and prints a level, records its steps; killed and resumed, it
   reuses the finished levels (the reference, c2, ran first) instead of running them again.
2. With the FAULT-INJECTING TEST PROXY (tests/support/fault_proxy.py) degrading replies of
   requests that overlap more than two others in flight: decisions drop where load crosses
   that, and the search stops below it.
3. Decisions judged as distributions: the proxy switches one agent session in four to
   another script (another tool) at every level — noise, no degradation — and the search is
   not stopped by it; with every session that starts among more than two in flight switched
   to a third script as well, divergence grows above that load and the search stops there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import HARBOR_ENV, bankbench

pytestmark = [pytest.mark.dynamo, pytest.mark.harbor, pytest.mark.slow]


def _steps(sweep: Path) -> list[dict]:
    path = sweep / "capacity.json"
    return json.loads(path.read_text())["steps"] if path.is_file() else []


def _complete(job: Path) -> bool:
    from bankbench.sweep.harbor_job import JobState, job_state

    return job.is_dir() and job_state(job) is JobState.COMPLETE


def test_search_prints_a_level_and_a_resumed_search_reuses_finished_levels(tmp_path):
    from bankbench.serve import replay

    trace = replay.write_trace(tmp_path / "trace.jsonl",
                               {f"cap-banking-{i:03d}": _turns("transfer_funds")
                                for i in range(3)})
    # three scenarios cannot certify a 10-point margin: a wide one, so latency decides
    cmd = [sys.executable, "-m", "bankbench", "capacity", "--profile", "cpu-mocker",
           "--set", "speedup_ratio=50", "--set", f"replay_trace={trace}", "--source", "sample",
           "--limit", "3", "--slo", "error_rate=0.5",
           # two SLO tiers from the same levels: every level passes the loose one; no level
           # meets a 1 ms p90 TTFT through Harbor and the frontend
           "--tier", "loose=ttft_p90_ms<=60000", "--tier", "strict=ttft_p90_ms<=1",
           "--max-level", "2", "--max-divergence", "0.5", "--alpha", "0.5", "--max-looks", "1",
           # trials of ~2 s at speedup 50 leave a slot idle ~10 % of the time between them
           # (Harbor's gap from one trial to the next): 0.89 measured; the default bound is
           # asserted on slower replies in test_steady_levels
           "--min-achieved-share", "0.75",
           "--ak", REPLAY_AK,
           "--out", str(tmp_path), "--name", "cap"]
    sweep = tmp_path / "cap"
    log = (tmp_path / "first.out").open("w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, **HARBOR_ENV})
    deadline = time.monotonic() + 400
    while not (_complete(sweep / "c2") and (sweep / "c1").is_dir()):
        # the reference (c2) ran first: kill the search while it runs level 1
        assert proc.poll() is None, (tmp_path / "first.out").read_text()[-3000:]
        assert time.monotonic() < deadline, (tmp_path / "first.out").read_text()[-3000:]
        time.sleep(0.5)
    proc.kill()
    proc.wait()
    first = _steps(sweep)
    assert [s["level"] for s in first] in ([], [1])  # c1 judged only if it beat the kill

    done = bankbench("capacity", "--resume", str(sweep), timeout=600)
    out = done.stdout
    assert done.returncode == 0, out[-3000:] + done.stderr[-3000:]
    assert "level 2: already complete, skipped" in out
    assert "capacity: level 1 passes" in out and "capacity: level 2 passes" in out
    steps = _steps(sweep)
    assert [(s["level"], s["reused"]) for s in steps] == [(1, bool(first)), (2, True)]
    record = json.loads((sweep / "capacity.json").read_text())
    assert record["finished"] and record["capacity"] == 2 and record["reference"] == "c2"
    assert record["stopped_because"] == "max_level"
    last = out.strip().splitlines()[-1]
    # three scenarios bound the divergence at 0.24 when all agree: under the wide margin, so
    # levels can pass, but below the design the error rates are shown for, and it says so
    assert last.startswith("Below the validated design: 3 scenarios")
    assert "tier loose: 2 concurrent agents (achieved" in last  # the first tier's line
    assert "within SLO error_rate≤0.5, lost_rate≤0.05, ttft_p90_ms≤60000" in last
    # one capacity per tier from the same two levels, each run once (the tiers read back on
    # --resume from capacity.json)
    assert [t["name"] for t in record["search"]["tiers"]] == ["loose", "strict"]
    assert [(t["name"], t["capacity"], t["boundary_high"]) for t in record["tiers"]] == [
        ("loose", 2, None), ("strict", None, 1)]
    assert record["tiers"][1]["limiting"] == ["ttft_p90_ms"]
    assert all([t["verdict"] for t in s["tiers"]] == ["pass", "fail"] for s in steps)
    table = out[out.index("capacity per tier"):].splitlines()
    assert [line.split()[0] for line in table[2:5]] == ["loose", "strict", "decisions"], table
    assert (sweep / "capacity.png").is_file() and (sweep / "report.md").is_file()
    manifest = json.loads((sweep / "sweep.json").read_text())
    # the reference ran first (the manifest may list the configured first level first)
    started = {r["level"]: r["started_at"] for r in manifest["level_records"]}
    assert started[2] < started[1], started


# --- degraded replies above a load --------------------------------------------------------

SCENARIOS = [f"banking-{i:03d}" for i in range(6)]
REPLAY_AK = "nvext_annotations=output_replay_id:cap-{scenario_id}:{request_index}"
SECOND_TOOL = {"transfer_funds": {"from_account": "12345678", "to_account": "87654321",
                                  "amount": 25},
               "freeze_card": {"card_number": "4111111111111111"},
               "open_account": {"account_type": "savings"}}


def _turns(second: str) -> list[str]:
    """Two tool calls (the balance, then `second`), then an answer."""
    from bankbench.serve.replay import tool_call_text as tc

    return [tc("get_account_balance", {"account_number": "12345678",
                                       "account_type": "checking"}),
            tc(second, SECOND_TOOL[second]), *["Both requests are done."] * 8]


def _scripts() -> dict[str, list[str]]:
    """Per scenario: `cap-` the usual calls, `alt-` another second tool, `far-` a third."""
    out = {}
    for sid in SCENARIOS:
        out[f"cap-{sid}"] = _turns("transfer_funds")
        out[f"alt-{sid}"] = _turns("freeze_card")
        out[f"far-{sid}"] = _turns("open_account")
    return out


@pytest.fixture
def degrading_proxy(tmp_path) -> Iterator[tuple]:
    from bankbench.serve import api, replay
    from tests.support.fault_proxy import FaultSchedule, in_thread

    trace = replay.write_trace(tmp_path / "trace.jsonl", _scripts())
    with api.running("cpu-mocker", workers=2, state_dir=tmp_path / "state",
                     options={"speedup_ratio": 1.0, "replay_trace": str(trace)}) as state, \
            in_thread(state.base_url, FaultSchedule(degrade_above=2)) as proxy:
        yield proxy.base_url, state.model, proxy


def test_degraded_replies_under_load_stop_the_search_below_that_load(tmp_path,
                                                                     degrading_proxy):
    base_url, model, proxy = degrading_proxy
    done = bankbench(
        "capacity", "--base-url", base_url, "--model", model, "--source", "sample",
        "--limit", str(len(SCENARIOS)), "--slo", "error_rate=0.5", "--max-level", "6",
        "--max-divergence", "0.5", "--alpha", "0.5", "--max-looks", "1", "--ak", REPLAY_AK,
        "--out", str(tmp_path), "--name", "cap", timeout=900)
    out = done.stdout
    assert done.returncode == 0, out[-3000:] + done.stderr[-3000:]
    record = json.loads((tmp_path / "cap" / "capacity.json").read_text())
    by_level = {s["level"]: s for s in record["steps"]}
    assert proxy.degraded > 0
    # Levels 1 and 2 never put more than two requests in flight: nothing degraded, the
    # same calls as the reference. Four concurrent agents do, and their decisions change.
    assert by_level[1]["passed"] and by_level[2]["passed"]
    assert not by_level[4]["passed"]
    check = {c["name"]: c for c in by_level[4]["checks"]}["tool_f1_divergence"]
    assert not check["passed"] and check["bound"] > 0.5
    assert (by_level[4]["decisions"]["divergence"]["mean"]
            > by_level[2]["decisions"]["divergence"]["mean"])
    assert record["capacity"] in (2, 3) and record["lowest_failing"] in (3, 4)
    # after the warning six scenarios earn (below the validated design), the answer
    assert out.strip().splitlines()[-1].startswith(
        f"Below the validated design: 6 scenarios (the error rates of docs/capacity.md hold "
        f"from 50) — {record['capacity']} concurrent agents")
    # the level table and the consistency section say what changed
    table = (tmp_path / "cap" / "consistency.csv").read_text()
    assert "malformed" in table and "truncated" in table


def _noise(grow_above: int | None):
    """One session in four of each scenario switched to the `alt-` script at every level;
    with `grow_above`, every session that starts among more requests in flight than that
    switched to `far-` instead."""
    def pick(prefix: str, k: int, in_flight: int) -> str:
        sid = prefix.removeprefix("cap-")
        if grow_above is not None and in_flight > grow_above:
            return f"far-{sid}"
        return f"alt-{sid}" if (int(sid[-3:]) + k) % 4 == 0 else prefix

    return pick


@pytest.fixture
def scripted_noise(tmp_path, request) -> Iterator[tuple]:
    from bankbench.serve import api, replay
    from tests.support.fault_proxy import FaultSchedule, in_thread

    trace = replay.write_trace(tmp_path / "trace.jsonl", _scripts())
    with api.running("cpu-mocker", workers=2, state_dir=tmp_path / "state",
                     options={"speedup_ratio": 1.0, "replay_trace": str(trace)}) as state, \
            in_thread(state.base_url, FaultSchedule(rescript=_noise(request.param))) as proxy:
        yield proxy.base_url, state.model, proxy


def _search(tmp_path: Path, base_url: str, model: str, max_level: int) -> dict:
    done = bankbench(
        "capacity", "--base-url", base_url, "--model", model, "--source", "sample",
        "--limit", str(len(SCENARIOS)), "--slo", "error_rate=0.5",
        "--max-level", str(max_level), "--max-divergence", "0.35", "--alpha", "0.5",
        "--max-looks", "1",
        "--ak", REPLAY_AK, "--out", str(tmp_path), "--name", "cap", timeout=1200)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads((tmp_path / "cap" / "capacity.json").read_text())


@pytest.mark.parametrize("scripted_noise", [None], indirect=True)
def test_scripted_noise_at_every_level_does_not_stop_the_search(tmp_path, scripted_noise):
    base_url, model, proxy = scripted_noise
    record = _search(tmp_path, base_url, model, max_level=4)
    assert proxy.rescripted > 0
    assert all(s["passed"] for s in record["steps"]), record["steps"]
    assert record["capacity"] == 4 and record["stopped_because"] == "max_level"
    floors = [s["decisions"]["own"]["mean"] for s in record["steps"]]
    assert min(floors) < 1.0  # the noise was there, at every level's own repeats


@pytest.mark.parametrize("scripted_noise", [2], indirect=True)
def test_divergence_growing_above_a_load_stops_the_search(tmp_path, scripted_noise):
    base_url, model, proxy = scripted_noise
    record = _search(tmp_path, base_url, model, max_level=8)
    by_level = {s["level"]: s for s in record["steps"]}
    assert by_level[1]["passed"] and by_level[2]["passed"]
    # Six scenarios may not show a level degraded beyond noise at this alpha (measured: c5, c6
    # and c8 inconclusive at divergence 0.17, 0.24, 0.33): then the levels it could not certify
    # bound the answer from above. Either way the decisions stop the search below c8.
    stops = [lv for lv in [record["lowest_failing"], *record["inconclusive"]] if lv is not None]
    assert stops and record["capacity"] is not None and record["capacity"] < min(stops) <= 8
    for level in stops:
        failed = [c["name"] for c in by_level[level]["checks"] if not c["passed"]]
        assert failed == ["tool_f1_divergence"], by_level[level]["checks"]
    assert record["limiting"] == ["tool_f1_divergence"]
    assert (max(by_level[lv]["decisions"]["divergence"]["mean"] for lv in stops)
            > by_level[2]["decisions"]["divergence"]["mean"])
