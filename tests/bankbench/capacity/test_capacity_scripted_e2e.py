"""`bankbench capacity` end to end on scripted decisions that change under load or at random,
with real parts: the CLI as a subprocess, the real harbor CLI, LocalEnvironment, the real Dynamo
frontend with the mocker engine (cpu-mocker, speed-up 1, one stack for the module), replies
scripted through response-replay traces so agents make real tool calls, and the FAULT-INJECTING
TEST PROXY (tests/support/fault_proxy.py) between them, one proxy and schedule per search.

Degraded: the proxy's server breaks the first time more than two agent sessions are open
together (or requests in flight) and stays broken — the replies in flight then and every reply
after them are degraded (FaultSchedule(stays_degraded=True)): decisions drop from the level
where load crosses two, and the search stops below it. The search starts at the reference, c2
(c1 runs its trials one at a time: as long as two batched levels together), whose two agents
never have more than two sessions open, and climbs to c3, its top, the first level that crosses
it (c4 above it adds only a bisect back to c3). c3's first three trials start together, so it
crosses two when the third of their sessions opens, on any host where those three sessions
overlap at all; that session and the level's nine later trials (each scenario runs once before
any runs twice: three scenarios' both repeats among them) are degraded from their first reply,
so the level's divergence is at least 2/3 (1 on this machine) against the margin 0.5.
Degrading only the replies of requests that met more than two in flight left the share of
degraded trials at c3, and the divergence (roughly its square), to the host's timing: whether
three requests overlap depends on the client's overhead between requests and between trials
against the reply time. Without figures (--no-plots): none is written.

Divergence that grows above a load with valid, other tool calls (every session starting among
more than two in flight switched to a third tool) is shown up to c8 by `benchmarks/capacity.py
--diverge-above 2`: six scenarios need levels up to c8 to show it, many minutes of search; the
search loop's stop on a decision drop above a level is simulated in test_simulation.py.

Noise: the proxy switches one agent session in four to another script (another tool) at every
level — decisions judged as distributions, no degradation: the search is not stopped by it. Its
levels (c2, the reference, and c4) also show steady state: each ran at least 3 x its concurrency
trials, with a steady measured window (warm-up and drain left out) and its achieved trial
concurrency recorded beside the configured one; every level it certified held at least
MIN_ACHIEVED_SHARE of it.

The two searches share the stack (what differs between them is the proxy's schedule): a mocker
start and stop fewer.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import bankbench
from tests.support.scripted_decisions import N_SCENARIOS, REPLAY_AK, noise, scripted_stack

pytestmark = [pytest.mark.dynamo, pytest.mark.harbor, pytest.mark.slow]


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    with scripted_stack(tmp_path_factory.mktemp("scripted-stack")) as state:
        yield state


def _behind_proxy(stack, schedule) -> Iterator[tuple]:
    from tests.support.fault_proxy import in_thread

    with in_thread(stack.base_url, schedule) as proxy:
        yield proxy.base_url, stack.model, proxy


@pytest.fixture
def degrading_proxy(stack) -> Iterator[tuple]:
    from tests.support.fault_proxy import FaultSchedule

    yield from _behind_proxy(stack, FaultSchedule(degrade_above=2, stays_degraded=True))


@pytest.fixture
def scripted_noise(stack) -> Iterator[tuple]:
    from tests.support.fault_proxy import FaultSchedule

    yield from _behind_proxy(stack, FaultSchedule(rescript=noise(None)))


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
    # Level 2 never has more than two sessions open: nothing degraded, the same calls as the
    # reference. Three concurrent agents do (the server breaks at c3, after c2's requests),
    # and their decisions change.
    with (tmp_path / "cap" / "requests.csv").open() as fh:
        at_c2 = sum(1 for r in csv.DictReader(fh) if r["level"] == "2")
    assert proxy.overloaded_at is not None and proxy.overloaded_at >= at_c2
    assert proxy.degraded > 0
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


def _search(tmp_path: Path, base_url: str, model: str, max_level: int, *more: str) -> dict:
    done = bankbench(
        "capacity", "--base-url", base_url, "--model", model, "--source", "sample",
        "--limit", str(N_SCENARIOS), "--slo", "error_rate=0.5",
        "--max-level", str(max_level), "--max-divergence", "0.35", "--alpha", "0.5",
        "--max-looks", "1", "--no-plots", *more,
        "--ak", REPLAY_AK, "--out", str(tmp_path), "--name", "cap", timeout=1200)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads((tmp_path / "cap" / "capacity.json").read_text())


def test_scripted_noise_at_every_level_does_not_stop_the_search(tmp_path, scripted_noise):
    base_url, model, proxy = scripted_noise
    record = _search(tmp_path, base_url, model, 4, "--start", "2")
    assert [s["level"] for s in record["steps"]] == [2, 4]
    assert proxy.rescripted > 0
    assert all(s["passed"] for s in record["steps"]), record["steps"]
    assert record["capacity"] == 4 and record["stopped_because"] == "max_level"
    floors = [s["decisions"]["own"]["mean"] for s in record["steps"]]
    assert min(floors) < 1.0  # the noise was there, at every level's own repeats
    _assert_levels_held_steady(tmp_path / "cap", record["steps"])


def _assert_levels_held_steady(sweep: Path, steps: list[dict]) -> None:
    """Every level cycled to steady state (>= 3 x its concurrency trials) and was measured
    over a steady window; a level is certifiable exactly when its share of its slots reached
    the bound, and every level the search certified reached it once the search checks it."""
    from analysis.windows import MIN_ACHIEVED_SHARE, certifiable

    manifest = json.loads((sweep / "sweep.json").read_text())
    with (sweep / "summary.csv").open() as fh:
        rows = {int(r["level"]): r for r in csv.DictReader(fh)}
    certified = [s["level"] for s in steps if s["passed"]]
    print()
    for record in manifest["level_records"]:
        level, row = record["level"], rows[record["level"]]
        trials = sum(1 for _ in (sweep / record["job_dir"]).glob("*/result.json"))
        assert trials >= 3 * level, (level, trials)  # cycled to steady state
        print(f"c{level}: {trials} trials, -k {record['repeats']}, achieved "
              f"{float(row['achieved_trial_concurrency']):.2f} of {level} "
              f"({float(row['achieved_trial_share']):.0%}) over {float(row['window_s']):.1f} s,"
              f" steady {row['steady']}, {'certified' if level in certified else 'not'}")
    assert certified
    for level, raw in rows.items():
        row = {"steady": raw["steady"] == "True",
               "achieved_trial_share": float(raw["achieved_trial_share"] or math.nan)}
        assert row["steady"], (level, raw["window_s"])
        share = row["achieved_trial_share"]
        assert 0 < share <= 1.05, (level, share)  # a share of the slots, never above them
        assert (certifiable(row) is None) == (share >= MIN_ACHIEVED_SHARE)
    checked = any(c.get("name") == "achieved_share" for s in steps for c in s["checks"])
    for level in certified if checked else []:
        assert float(rows[level]["achieved_trial_share"]) >= MIN_ACHIEVED_SHARE, level
