"""The long-run test of paired blocks (batch means, Student's t, a drift check): it calls a
clear shift on long runs, not identical runs that drift, and gives no p on runs too short to
estimate their own drift. (The compare's share rows use it; latency rows are judged on whole
runs: tests/analysis/test_compare_runs.py.)"""

from __future__ import annotations

import numpy as np

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
