"""What `--compare` says it could see: each test once in the Holm family, the power beside a
quality verdict, "underpowered" where a 10-point difference would mostly be missed, and latency
verdicts that swap whole waves of trials (identical runs with slow trials are not called, a
real slowdown is)."""

from __future__ import annotations

import json

import numpy as np

from analysis.compare import POWER_AT, TOO_FEW
from analysis.metrics.power import GRID, detectable, power_curve
from analysis.metrics.signflip import signflip_test
from analysis.report import write_report
from tests.analysis import quality_jobs


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


def signflip_p(d, waves):
    return signflip_test(d, waves)[0]


def test_signflip_p_is_exact_on_known_answers():
    assert signflip_test(np.ones(5), np.arange(5)) == (2 / 32, 1.0)  # only all + and all -
    assert signflip_test(-np.ones(5), np.arange(5))[1] == -1.0
    # Waves, not trials, are what flips: 6 trials in 3 waves are 8 patterns, not 64.
    assert signflip_p(np.ones(6), np.repeat(np.arange(3), 2)) == 2 / 8
    assert np.isnan(signflip_p(np.ones(6), np.zeros(6, dtype=int)))  # one wave: no test
    assert signflip_p(np.zeros(8), np.arange(8)) == 1.0
    # One enormous wave weighs by its rank, like any other.
    assert signflip_p(np.array([1e6, 1, 1, 1, 1, 1, 1, 1]), np.arange(8)) == 2 / 256
    # Under the null its false-call rate is at most its level.
    rng = np.random.default_rng(3)
    ps = [signflip_p(rng.standard_t(2, 12), np.arange(12)) for _ in range(400)]
    assert np.mean(np.array(ps) <= 0.05) <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / 400)


def _latency_job(job_dir, seed: int, slow_ms: float = 0.0, slow_trials: int = 0):
    """30 scenarios, one trial each at concurrency 1, 4 calls; a scenario's calls take
    20-600 ms; `slow_trials` random trials 5x slower; every call `slow_ms` slower."""
    from analysis.synthetic import record, write_job, write_trial

    rng = np.random.default_rng(seed)
    write_job(job_dir, 1, n_total_trials=30)
    slow = set(rng.choice(30, slow_trials, replace=False))
    for i in range(30):
        scenario = f"banking-{i:03d}"
        factor = 5.0 if i in slow else 1.0
        calls = [record(request_id=f"{i}-{n}", scenario_id=scenario, start_unix_ns=
                        (i * 10 + n) * 10 ** 9, ttft_ms=(20.0 * (i + 1) * rng.lognormal(0, 0.2)
                                                       + slow_ms) * factor,
                        e2e_ms=400.0 * factor + slow_ms, completion_tokens=3)
                 for n in range(4)]
        write_trial(job_dir, f"{scenario}__0", scenario_id=scenario, records=calls,
                    rewards=quality_jobs.rewards(1.0), agent_status=quality_jobs.OK)
    return job_dir


def test_latency_rows_swap_whole_trials(tmp_path):
    base = _latency_job(tmp_path / "base", 1, slow_trials=2)
    same = _latency_job(tmp_path / "same", 2, slow_trials=2)
    slower = _latency_job(tmp_path / "slower", 3, slow_ms=40.0, slow_trials=2)
    report = write_report(base, out=tmp_path / "r", compare=[same, slower], draw=False)
    rows = json.loads((report.parent / "summary.json").read_text())["comparison"]
    called = {(r["source"], r["metric"]): r["verdict"] for r in rows}
    for key in ("ttft_ms_p50", "ttft_ms_p99", "e2e_ms_p99"):
        assert called[("same", key)] == "no clear difference", key
    assert called[("slower", "ttft_ms_p50")] == "worse"
