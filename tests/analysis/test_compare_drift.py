"""A latency verdict when the server's speed drifts through each run: the long-run test of
the paired blocks (batch means, Student's t, a drift check) calls a clear slowdown on long
runs, not identical runs that drift, and says it cannot tell on runs too short to estimate
their own drift."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.compare import CANNOT_TELL, UNCLEAR, WORSE, compare_table
from analysis.metrics.longrun import (
    MIN_BLOCKS,
    batch_means_test,
    block_means,
    drift_p,
    long_run_test,
)
from analysis.metrics.student_t import t_two_sided


def _ar1(rng: np.random.Generator, n: int, rho: float, sd: float) -> np.ndarray:
    out = np.empty(n)
    for t, e in enumerate(rng.normal(0, sd, n)):
        out[t] = e if t == 0 else rho * out[t - 1] + np.sqrt(1 - rho ** 2) * e
    return out


def test_student_t_on_known_quantiles():
    for t, df in ((12.706, 1), (4.303, 2), (2.571, 5), (2.228, 10)):
        assert abs(t_two_sided(t, df) - 0.05) < 2e-4
    assert t_two_sided(0.0, 5) == 1.0 and np.isnan(t_two_sided(np.nan, 5))


def test_drift_check_sees_neighbours_that_lean_together():
    rng = np.random.default_rng(1)
    steady = rng.normal(0, 0.2, 60)
    slow = steady + np.sin(2 * np.pi * np.arange(60) / 60)
    assert drift_p(steady) > 0.05 >= drift_p(slow)
    assert drift_p(steady + 1.0) == drift_p(steady)  # a shift of the whole run is no drift
    assert list(block_means(np.arange(5.0), 2)) == [0.5, 2.5, 4.0]


def test_drift_check_is_not_swamped_by_a_few_very_slow_blocks():
    """The check ranks the blocks: a trend plain in the run stays plain beside a few blocks
    a thousand times off (squares of them would drown it), and how the blocks are scaled
    (logs or not) changes nothing."""
    rng = np.random.default_rng(6)
    trending = np.linspace(0, 1, 50) + rng.normal(0, 0.2, 50)
    spiked = trending.copy()
    spiked[[7, 31]] += 1000.0
    assert drift_p(spiked) <= 0.05
    assert drift_p(np.exp(trending)) == drift_p(trending)


def test_one_check_over_several_columns_sees_the_clearest_and_holds_its_level():
    """The columns of one pair, block for block: a drift plain in one of them is seen beside
    columns that hide it in noise; with none drifting the check of all rejects about as
    often as one column's would, however alike the columns are."""
    rng = np.random.default_rng(4)
    drift = np.sin(2 * np.pi * np.arange(48) / 48)
    clear, noisy = drift + rng.normal(0, 0.2, 48), 0.2 * drift + rng.normal(0, 1.0, 48)
    assert drift_p(noisy) > 0.05 >= drift_p(clear, noisy)
    alike = [drift_p(*(z + rng.normal(0, 0.3, (3, 48))), seed=k)
             for k, z in enumerate(rng.normal(0, 1, (200, 48)))]
    assert 0.01 <= np.mean(np.array(alike) <= 0.05) <= 0.10
    assert drift_p(np.ones(10), clear[:10]) == drift_p(clear[:10])  # a constant one adds none


def test_identical_runs_that_drift_are_rarely_called():
    """Two runs of one server, each drifting (AR(1) 0.9 between blocks, sd 0.3): the long-run
    test calls a difference at 5 % in few of them; counted blocks as independent would in
    most."""
    rng = np.random.default_rng(2)
    calls = naive = 0
    for _ in range(100):
        d = _ar1(rng, 50, 0.9, 0.3) - _ar1(rng, 50, 0.9, 0.3) + rng.normal(0, 0.2, 50)
        p, _, _ = long_run_test(d)
        calls += bool(p <= 0.05)
        naive += bool(abs(d.mean()) / (d.std(ddof=1) / np.sqrt(50)) > 2.01)
    assert calls <= 10 and naive >= 40


def test_a_clear_shift_on_long_runs_is_called_and_short_runs_cannot_tell():
    rng = np.random.default_rng(3)
    d = np.log(1.5) + rng.normal(0, 0.2, 50)
    p, lean, why = long_run_test(d)
    assert p < 0.001 and lean == 1.0 and why == ""
    assert batch_means_test(-d)[1] == -1.0
    p, _, why = long_run_test(d[:MIN_BLOCKS - 1])
    assert np.isnan(p) and why.startswith("too short")


def _requests(source: str, n: int, factors: np.ndarray, seed: int) -> pd.DataFrame:
    """n scenarios, one trial each at concurrency 1, 4 calls of 50-350 ms, trial t's calls
    `factors[t]` times slower."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame([{"source": source, "level": 1, "scenario_id": f"s{t:03d}",
                          "trial": f"{source}{t}", "start_unix_ns": (4 * t + j) * 10 ** 9,
                          "ok": True,
                          "ttft_ms": 50.0 * (1 + t % 7) * factors[t] * rng.lognormal(0, 0.1)}
                         for t in range(n) for j in range(4)])


def test_a_drift_one_latency_column_shows_sets_every_latency_row_of_the_pair_aside():
    """TTFT drifts plainly through both runs; end-to-end time, far noisier, barely shows it;
    both rows cannot tell, not only the one whose own blocks give the drift away."""
    n = 60
    drifting = np.exp(0.5 * np.sin(2 * np.pi * np.arange(n) / n))
    requests = pd.concat([_requests("a", n, np.ones(n), 1), _requests("b", n, drifting, 2)])
    noise = np.random.default_rng(5).lognormal(0, 1.0, len(requests))
    requests["e2e_ms"] = 2000.0 * noise + requests["ttft_ms"]
    summary = pd.DataFrame([{"source": s, "level": 1,
                             **{k: requests.loc[requests["source"] == s, c].median()
                                for k, c in (("ttft_ms_p50", "ttft_ms"), ("e2e_ms_p50", "e2e_ms"))}}
                            for s in "ab"])
    rows = compare_table(summary, None, requests,
                         keys=("ttft_ms_p50", "e2e_ms_p50")).set_index("metric")
    own = block_means(np.log(requests[requests["source"] == "b"].groupby("trial", sort=False)
                             ["e2e_ms"].median().to_numpy()
                             / requests[requests["source"] == "a"].groupby("trial", sort=False)
                             ["e2e_ms"].median().to_numpy()), 1)
    assert drift_p(own) > 0.05  # alone, the e2e row would have given a verdict
    for key in ("ttft_ms_p50", "e2e_ms_p50"):
        assert rows.at[key, "verdict"] == CANNOT_TELL
        assert rows.at[key, "power_note"] == "cannot tell: its server drifted within a run"


def _verdict(n: int, factors: np.ndarray) -> tuple[str, str]:
    requests = pd.concat([_requests("a", n, np.ones(n), 1), _requests("b", n, factors, 2)])
    summary = pd.DataFrame([{"source": s, "level": 1,
                             "ttft_ms_p50": requests.loc[requests["source"] == s,
                                                         "ttft_ms"].median()} for s in "ab"])
    row = compare_table(summary, None, requests, keys=("ttft_ms_p50",)).iloc[0]
    return row["verdict"], row["power_note"]


def test_the_compare_calls_a_steady_slowdown_not_a_drifting_server():
    n = 60
    assert _verdict(n, np.full(n, 1.5))[0] == WORSE
    assert _verdict(n, np.ones(n)) == (UNCLEAR, "")
    drifting = np.exp(0.5 * np.sin(2 * np.pi * np.arange(n) / n))
    verdict, note = _verdict(n, drifting)
    assert verdict == CANNOT_TELL and note == "cannot tell: its server drifted within a run"
    verdict, note = _verdict(20, np.full(20, 1.5))  # clear, but too short to see a drift
    assert verdict == CANNOT_TELL and "too short" in note
