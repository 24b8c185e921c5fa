"""A level's measured window on hand-made schedules with known answers: warm-up and drain left
out, the pause of a resume never measured, a cut-short run ending where it was cut, and the
whole-run fallback for a level too small to fill its slots."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd
import pytest

from analysis.metrics.throughput import throughput_metrics
from analysis.windows import (
    MIN_ACHIEVED_SHARE,
    certifiable,
    in_window,
    level_window,
    overlapping_repeats,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
S = 1_000_000_000  # ns per second


def schedule(slots: int, n: int, length_s: float, start_s: float = 0.0, job: str = "c",
             first: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """`n` trials of `length_s` through `slots` slots, back to back, from `start_s`; each trial
    makes one LLM request over its whole second half (10 tokens)."""
    trials, requests = [], []
    free = [start_s] * slots
    for i in range(n):
        slot = int(np.argmin(free))
        begin = free[slot]
        free[slot] = begin + length_s
        trials.append({"job": job, "trial": f"t{first + i}", "source": "s", "level": slots,
                       "scenario_id": f"banking-{(first + i) % 4:03d}", "repeat": 1,
                       "started_at": T0 + timedelta(seconds=begin),
                       "finished_at": T0 + timedelta(seconds=begin + length_s)})
        req_start = int((T0.timestamp() + begin + length_s / 2) * S)
        requests.append({"start_unix_ns": req_start, "end_unix_ns": req_start +
                         int(length_s / 2 * S), "e2e_ms": length_s / 2 * 1000, "ok": True,
                         "completion_tokens": 10.0})
    return pd.DataFrame(trials), pd.DataFrame(requests)


def at(seconds: float) -> int:
    return int((T0.timestamp() + seconds) * S)


def test_warm_up_and_drain_are_left_out():
    # 2 slots, 8 trials of 10 s: waves start at 0, 10, 20, 30; the last starts at 30 and the
    # first end after it is at 40 (both slots end together). Warm-up: half of the first 2
    # trials finished, at 10.
    trials, requests = schedule(2, 8, 10.0)
    window = level_window(trials, requests, 2)
    assert window.steady and window.intervals == ((at(10), at(40)),)
    figures = throughput_metrics(requests, trials, 2.0, window)
    assert figures["window_s"] == pytest.approx(30.0)
    assert figures["achieved_trial_concurrency"] == pytest.approx(2.0)
    assert figures["achieved_trial_share"] == pytest.approx(1.0)
    # requests start mid-trial: those of the waves at 10, 20 and 30 start at 15, 25, 35
    assert in_window(requests, window).sum() == 6
    assert figures["request_throughput"] == pytest.approx(6 / 30.0)
    assert figures["achieved_concurrency"] == pytest.approx(1.0)  # each slot: half in a request
    assert certifiable(figures) is None


def test_a_ragged_drain_ends_the_window_at_the_first_idle_slot():
    # 3 slots, 7 trials of 10 s: the 7th starts at 20 in slot 0 while slots 1 and 2 end at 30
    # with nothing left to start: the window ends at 30, not at 30 + the last trial.
    trials, requests = schedule(3, 7, 10.0)
    window = level_window(trials, requests, 3)
    assert window.intervals == ((at(10), at(30)),)


def test_no_warm_up_and_keeping_the_drain_are_the_whole_run():
    trials, requests = schedule(2, 8, 10.0)
    window = level_window(trials, requests, 2, warmup_share=0.0, keep_drain=True)
    assert window.intervals == ((at(0), at(40)),)


def test_a_level_too_small_for_its_slots_falls_back_to_the_whole_run_and_says_so():
    trials, requests = schedule(4, 4, 10.0)  # one wave: no stretch with every slot turned over
    window = level_window(trials, requests, 4)
    assert not window.steady
    figures = throughput_metrics(requests, trials, 4.0, window)
    assert figures["steady"] is False and figures["window_s"] == pytest.approx(5.0)
    assert figures["achieved_trial_concurrency"] == pytest.approx(4.0)
    assert certifiable(figures).startswith("no steady window")


def test_a_resumed_level_is_measured_over_its_runs_not_the_pause():
    """The same level run straight, and run as 4 + 4 trials with a 600 s pause between: the
    resumed level's throughput and achieved concurrency are the straight run's (its windows
    are shorter: each run has its own warm-up and drain)."""
    straight_trials, straight_requests = schedule(2, 16, 10.0)
    straight = throughput_metrics(straight_requests, straight_trials, 2.0,
                                  level_window(straight_trials, straight_requests, 2))
    a_trials, a_requests = schedule(2, 8, 10.0)
    b_trials, b_requests = schedule(2, 8, 10.0, start_s=640.0, first=8)
    trials = pd.concat([a_trials, b_trials], ignore_index=True)
    requests = pd.concat([a_requests, b_requests], ignore_index=True)
    runs = [(T0, None), (T0 + timedelta(seconds=640), None)]
    window = level_window(trials, requests, 2, runs=runs)
    assert window.runs == 2 and window.intervals == ((at(10), at(40)), (at(650), at(680)))
    resumed = throughput_metrics(requests, trials, 2.0, window)
    for key in ("request_throughput", "output_token_throughput", "achieved_concurrency",
                "achieved_trial_concurrency"):
        assert resumed[key] == pytest.approx(straight[key]), key
    # Found from the trials alone when sweep.json has no runs (a sweep before they were kept).
    assert level_window(trials, requests, 2).intervals == window.intervals
    # Over first start to last end, the pause would have counted: what the old figure did.
    whole = throughput_metrics(requests, trials, 2.0)
    assert whole["achieved_trial_concurrency"] < 0.25 * straight["achieved_trial_concurrency"]


def test_a_level_stopped_mid_run_and_resumed_has_the_straight_runs_rates():
    """As a sweep stopped with Ctrl-C and resumed leaves it: the first run's two trials in
    flight at the stop (started at 20) are set aside and run again, so the run ends at the cut
    (their start) and the kept trials before it are its measured part; after a pause the resume
    runs the rest. Rates and concurrency equal the level run straight; the pause is not in
    them, nor are the trials cut."""
    straight_trials, straight_requests = schedule(2, 12, 10.0)
    straight = throughput_metrics(straight_requests, straight_trials, 2.0,
                                  level_window(straight_trials, straight_requests, 2))
    kept_trials, kept_requests = schedule(2, 4, 10.0)  # 0-20; the pair from 20 was cut
    rest_trials, rest_requests = schedule(2, 8, 10.0, start_s=300.0, first=4)
    trials = pd.concat([kept_trials, rest_trials], ignore_index=True)
    requests = pd.concat([kept_requests, rest_requests], ignore_index=True)
    runs = [(T0, T0 + timedelta(seconds=20)), (T0 + timedelta(seconds=300), None)]
    window = level_window(trials, requests, 2, runs=runs)
    assert window.intervals == ((at(10), at(20)), (at(310), at(340)))
    resumed = throughput_metrics(requests, trials, 2.0, window)
    for key in ("request_throughput", "output_token_throughput", "achieved_concurrency",
                "achieved_trial_concurrency"):
        assert resumed[key] == pytest.approx(straight[key]), key
    assert resumed["output_token_throughput"] == pytest.approx(2.0)  # 2 slots x 10 tok / 10 s


def test_a_run_stopped_mid_level_ends_where_it_was_cut():
    trials, requests = schedule(2, 8, 10.0)
    runs = [(T0, T0 + timedelta(seconds=25))]
    assert level_window(trials, requests, 2, runs=runs).intervals == ((at(10), at(25)),)


def test_the_first_shard_to_drain_ends_a_sharded_levels_window():
    a_trials, a_requests = schedule(2, 8, 10.0, job="c4/s0")
    b_trials, b_requests = schedule(2, 6, 10.0, job="c4/s1", first=8)  # its last start: 20
    trials = pd.concat([a_trials, b_trials], ignore_index=True)
    requests = pd.concat([a_requests, b_requests], ignore_index=True)
    # warm-up: 2 of the first 4 trials finished (at 10); s1's slots go idle at 30
    assert level_window(trials, requests, 4).intervals == ((at(10), at(30)),)


def test_a_window_holding_one_wave_is_not_steady():
    """2 x LEVEL trials: between warm-up and drain only the second wave starts, all at once;
    one more trial and a slot turns over inside the window."""
    for slots in (1, 2, 4):
        trials, requests = schedule(slots, 2 * slots, 10.0)
        window = level_window(trials, requests, slots)
        assert not window.steady, slots
        assert certifiable(throughput_metrics(requests, trials, float(slots), window)) \
            .startswith("no steady window")
        trials, requests = schedule(slots, 2 * slots + 1, 10.0)
        assert level_window(trials, requests, slots).steady, slots


def test_a_level_that_did_not_hold_its_slots_is_not_certified():
    # 2 configured slots, but each trial leaves its slot idle 10 s before the next starts.
    trials, requests = schedule(2, 8, 10.0)
    trials["finished_at"] = trials["started_at"] + timedelta(seconds=5)
    requests["end_unix_ns"] = requests["start_unix_ns"]
    figures = throughput_metrics(requests, trials, 2.0, level_window(trials, requests, 2))
    assert figures["achieved_trial_share"] == pytest.approx(0.5, abs=0.05)
    assert "< 0.90" in certifiable(figures)
    assert MIN_ACHIEVED_SHARE == 0.9


def test_repeats_that_ran_side_by_side_are_named_in_pairs():
    trials, _ = schedule(8, 8, 10.0)  # 8 slots, 4 scenarios x 2: every pair co-runs
    trials["repeat"] = [1, 1, 1, 1, 2, 2, 2, 2]
    pairs = overlapping_repeats(trials)
    assert len(pairs) == 4 and set(pairs["repeat_a"]) == {1} and set(pairs["repeat_b"]) == {2}
    assert pairs["overlap_s"].tolist() == [10.0] * 4
    apart, _ = schedule(4, 8, 10.0)  # 4 slots: repeat 2 of each scenario waits for a free slot
    apart["repeat"] = [1, 1, 1, 1, 2, 2, 2, 2]
    assert overlapping_repeats(apart).empty


def test_an_empty_level_has_no_window():
    trials, requests = schedule(2, 0, 10.0)
    trials = pd.DataFrame(columns=["job", "started_at", "finished_at"])
    requests = pd.DataFrame(columns=["start_unix_ns", "end_unix_ns", "e2e_ms", "ok",
                                     "completion_tokens"])
    window = level_window(trials, requests, 2)
    assert not window.steady and math.isnan(window.seconds)


def test_the_warm_up_share_sets_how_many_first_trials_must_end():
    # 2 slots, the first two trials of 10 s and 14 s: half of them end at 10, all at 14.
    trials, requests = schedule(2, 8, 10.0)
    trials.loc[1, "finished_at"] = trials.loc[1, "started_at"] + timedelta(seconds=14)
    assert level_window(trials, requests, 2, warmup_share=0.5).intervals[0][0] == at(10)
    assert level_window(trials, requests, 2, warmup_share=1.0).intervals[0][0] == at(14)


def test_a_short_gap_in_an_old_level_is_not_taken_for_a_resume():
    # Without runs in sweep.json a new run starts only where no trial ran for PAUSE_GAP_S.
    a_trials, a_requests = schedule(2, 8, 10.0)
    b_trials, b_requests = schedule(2, 8, 10.0, start_s=45.0, first=8)  # idle 5 s, not a pause
    trials = pd.concat([a_trials, b_trials], ignore_index=True)
    requests = pd.concat([a_requests, b_requests], ignore_index=True)
    window = level_window(trials, requests, 2)
    assert window.runs == 1 and window.intervals == ((at(10), at(85)),)


def test_certifying_takes_the_bound_as_stated():
    assert certifiable({"steady": True, "achieved_trial_share": MIN_ACHIEVED_SHARE}) is None
    assert "0.89 of configured concurrency < 0.90" in certifiable(
        {"steady": True, "achieved_trial_share": 0.89})
    assert certifiable({"steady": True, "achieved_trial_share": 0.7}, bound=0.6) is None
    assert certifiable({"steady": True, "achieved_trial_share": math.nan}) == \
        "achieved concurrency unknown"
    assert certifiable({"achieved_trial_share": 1.0}).startswith("no steady window")
