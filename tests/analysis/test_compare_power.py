"""What `--compare` says it could see: each test once in the Holm family, the power beside a
quality verdict, "underpowered" where a 10-point difference would mostly be missed, and share
verdicts from paired trials and time blocks both (latency is judged on whole runs:
tests/analysis/test_compare_runs.py)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from analysis.compare import POWER_AT, TOO_FEW
from analysis.metrics.power import GRID, detectable, power_curve
from analysis.metrics.signflip import paired_request_tests, signed_rank_test
from analysis.report import write_report
from tests.support import quality_jobs


def _runs(n: int, seed: int, shift: float = 0.0) -> dict[str, list]:
    rng = np.random.default_rng(seed)
    return {f"banking-{i:03d}": [float(np.clip(rng.choice([0, 1 / 3, 0.5, 2 / 3, 1]) - shift,
                                               0, 1))] for i in range(n)}


def _rows(tmp_path, n: int, shift: float) -> dict[str, dict]:
    base = quality_jobs.sweep(tmp_path / f"b{n}", {2: _runs(n, 1)})
    other = quality_jobs.sweep(tmp_path / f"o{n}", {2: _runs(n, 2, shift)})
    report = write_report(base, out=tmp_path / f"r{n}", compare=[other], draw=False)
    rows = json.loads((report.parent / "summary.json").read_text())["comparison"]
    return {r["metric"]: r for r in rows}, report.read_text()


def test_a_compare_of_14_scenarios_says_it_is_underpowered(tmp_path):
    rows, text = _rows(tmp_path, 14, 0.0)
    tsq = rows["tsq_mean"]
    assert tsq["n_paired"] == 14 and tsq["verdict"] != TOO_FEW
    assert tsq["power_at"] < 0.8 and tsq["power_note"].startswith("underpowered")
    assert np.isnan(tsq["detectable"]) or tsq["detectable"] > POWER_AT
    assert "underpowered" in text.split("## Comparison", 1)[1]
    # Nothing lost: TSQ counted with infra failures as 0 is the same test, counted once.
    twin = rows["tsq_infra0_mean"]
    assert twin["tested_with"] == "tsq_mean" and twin["verdict"] == tsq["verdict"]
    assert twin["p_value"] == tsq["p_value"] and twin["power_note"] == tsq["power_note"]


def test_power_grows_with_the_size_and_the_scenarios():
    rng = np.random.default_rng(0)
    spread = lambda n: rng.choice([0, 0.5, 1], n) - rng.choice([0, 0.5, 1], n)  # noqa: E731
    rule = lambda low, high, p: low > 0 and p <= 0.05 / 10  # noqa: E731
    small, large = power_curve(spread(12), rule), power_curve(spread(60), rule)
    assert np.all(np.diff(small) >= -0.05) and np.all(np.diff(large) >= -0.05)
    assert small[-1] > 0.8 and large[GRID.index(0.2)] > small[GRID.index(0.2)]
    assert detectable(GRID, large) < detectable(GRID, small)


def test_the_trial_test_is_exact_on_known_answers():
    assert signed_rank_test(np.ones(5)) == (2 / 32, 1.0)  # only all + and all -
    assert signed_rank_test(-np.ones(5))[1] == -1.0
    assert np.isnan(signed_rank_test(np.ones(1))[0])
    assert signed_rank_test(np.zeros(8))[0] == 1.0
    # One enormous difference weighs by its rank, like any other.
    assert signed_rank_test(np.array([1e6, 1, 1, 1, 1, 1, 1, 1]))[0] == 2 / 256
    # Under the null its false-call rate is at most its level, heavy tails or not.
    rng = np.random.default_rng(3)
    ps = [signed_rank_test(rng.standard_t(2, 12))[0] for _ in range(400)]
    assert np.mean(np.array(ps) <= 0.05) <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / 400)


def test_co_running_trials_count_once_per_block():
    """Trials of one block share the server's moment (a load factor per block of 4, sd 0.3,
    in the other run only): trial against trial the runs differ, block against block they
    do not, so the request row is not called."""
    rng = np.random.default_rng(7)
    n = 200
    frames, d = [], None
    for side in ("base", "other"):
        load = rng.lognormal(0, 0.3, n // 4).repeat(4) if side == "other" else np.ones(n)
        values = rng.lognormal(0, 0.05, n) * load
        frames.append(pd.DataFrame({"scenario_id": [f"s{i}" for i in range(n)],
                                    "trial": [f"{side}{i}" for i in range(n)],
                                    "start_unix_ns": np.arange(n), "value": values}))
        d = np.log(values) if d is None else np.log(values) - d
    assert signed_rank_test(d)[0] < 0.05  # trial against trial alone would call it
    [(p, lean, pairs, why)], = paired_request_tests([(*frames, (50,))], wave=4)
    assert pairs == n and p > 0.05 and why == ""
