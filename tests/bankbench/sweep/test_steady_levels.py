"""Levels at steady state, end to end: a capacity search on the real Dynamo mocker (real harbor
CLI, LocalEnvironment; scripted tool calls through a response-replay trace) runs every level
with at least 3 x its concurrency trials, each with a steady measured window (warm-up and
drain left out), and its achieved trial concurrency over it is recorded and printed beside the
configured one. Once the search checks it (a CapacityStep check named `achieved_share`),
every level it certifies held at least MIN_ACHIEVED_SHARE of its configured concurrency."""

from __future__ import annotations

import csv
import json
import math

import pytest

from tests.support.cli import bankbench

pytestmark = [pytest.mark.dynamo, pytest.mark.harbor, pytest.mark.slow]

REPLAY_AK = "nvext_annotations=output_replay_id:steady-{scenario_id}:{request_index}"


def _script() -> list[str]:
    from bankbench.serve.replay import tool_call_text as tc

    return [tc("get_account_balance", {"account_number": "12345678",
                                       "account_type": "checking"}),
            *["Your balance is shown above."] * 8]


def test_every_certified_level_held_its_concurrency_over_its_window(tmp_path):
    from analysis.windows import MIN_ACHIEVED_SHARE, certifiable
    from bankbench.serve import replay

    trace = replay.write_trace(tmp_path / "trace.jsonl",
                               {f"steady-banking-{i:03d}": _script() for i in range(4)})
    done = bankbench("capacity", "--profile", "cpu-mocker", "--set", "speedup_ratio=1",
                     "--set", f"replay_trace={trace}", "--source", "sample", "--limit", "4",
                     "--slo", "ttft_p90_ms=60000", "--max-level", "4", "--max-drop", "0.5",
                     "--alpha", "0.5", "--ak", REPLAY_AK, "--out", str(tmp_path),
                     "--name", "cap", timeout=1500)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    sweep = tmp_path / "cap"
    steps = json.loads((sweep / "capacity.json").read_text())["steps"]
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
    assert certified, done.stdout[-2000:]
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
