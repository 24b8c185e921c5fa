"""A latency verdict beside the run's own wander: a server whose speed wanders within a run is
not called different, a pair that could not have called a 1.5x slowdown says it cannot tell,
and a steady slowdown is still called."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.compare import CANNOT_TELL, UNCLEAR, WORSE, compare_table
from analysis.metrics.signflip import signed_rank_test
from analysis.metrics.wander import block_means, clear_of_wander, wander

N = 20


def test_wander_is_the_slow_part_of_the_blocks():
    rng = np.random.default_rng(3)
    noise = rng.normal(0, 0.2, N)
    slow = np.sin(np.pi * np.arange(N) / N)  # slow for a long stretch, fast at the ends
    assert wander(noise) < 0.1 < 0.2 < wander(noise + slow)
    assert clear_of_wander(noise + 1.0) and not clear_of_wander(noise + slow)
    assert np.isnan(wander(np.ones(2))) and clear_of_wander(np.ones(2))  # too few to see one
    assert list(block_means(np.arange(5.0), 2)) == [0.5, 2.5, 4.0]


def _requests(source: str, factors: np.ndarray, seed: int) -> pd.DataFrame:
    """N scenarios, one trial each at concurrency 1, 4 calls of 50-1000 ms, trial t's calls
    `factors[t]` times slower."""
    rng = np.random.default_rng(seed)
    rows = [{"source": source, "level": 1, "scenario_id": f"s{t:02d}", "trial": f"{source}{t}",
             "start_unix_ns": (4 * t + j) * 10 ** 9, "ok": True,
             "ttft_ms": 50.0 * (1 + t % 7) * factors[t] * rng.lognormal(0, 0.1)}
            for t in range(N) for j in range(4)]
    return pd.DataFrame(rows)


def _verdict(factors: np.ndarray) -> tuple[str, str]:
    requests = pd.concat([_requests("a", np.ones(N), 1), _requests("b", factors, 2)])
    summary = pd.DataFrame([{"source": s, "level": 1,
                             "ttft_ms_p50": requests.loc[requests["source"] == s,
                                                         "ttft_ms"].median()} for s in "ab"])
    row = compare_table(summary, None, requests, keys=("ttft_ms_p50",)).iloc[0]
    return row["verdict"], row["power_note"]


def test_a_server_that_wanders_within_a_run_is_not_called_and_cannot_tell():
    course = np.exp(0.6 * np.sin(np.pi * np.arange(N) / N) - 0.1)
    # Most trials lean one way: trial against trial alone would call it worse.
    assert signed_rank_test(np.log(course) + np.random.default_rng(0).normal(0, 0.1, N))[0] \
        < 0.01
    verdict, note = _verdict(course)
    assert verdict == CANNOT_TELL and note.startswith("cannot tell: a 1.5x slower run")


def test_a_steady_slowdown_is_called_and_a_quiet_pair_says_no_clear_difference():
    assert _verdict(np.full(N, 1.5))[0] == WORSE
    assert _verdict(np.ones(N)) == (UNCLEAR, "")
