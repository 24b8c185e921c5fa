"""Aggregate throughput and achieved concurrency over the measured window of one level.

The measured window (analysis/windows.py) is the stretch of each run of the level when all its
slots were busy: warm-up and drain left out, the pause of a resume never counted. Rates count
the requests that started inside it; in-flight figures are time-weighted over it. A level with
no steady stretch (too few trials for its slots) is measured over its whole runs, first request
start to last request end, and `steady` says so.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.metrics.base import Metric
from analysis.windows import Window, busy_seconds, in_window, trial_concurrency

WINDOW = Metric("window_s", "Measured window", "s",
                "Seconds of the level's runs with every slot busy: each run from warm-up end "
                "(half its first LEVEL trials finished) to drain start (the first trial end "
                "after its last trial start), pauses left out; without such a stretch, each "
                "run's first request start to last request end (`steady` false).",
                column="window (s)", better=None)
STEADY = Metric("steady", "Steady window", "yes/no",
                "The level had a stretch with every slot busy, and its throughput, goodput and "
                "request percentiles are over it (requests that started inside); otherwise "
                "over whole runs.", column="steady", better=None)
RUNS = Metric("runs", "Runs measured", "runs",
              "Runs of the level's Harbor jobs the window is cut from: 1, or more when the "
              "level was resumed after an interruption or got extra passes of repeats.",
              column="runs", better=None)
RESUMED = Metric("resumed", "Resumed", "yes/no",
                 "The level was continued after an interruption (sweep.json): its figures are "
                 "over the runs it ran in, the pause between them left out.", column="resumed",
                 better=None)
OUTPUT_THROUGHPUT = Metric(
    "output_token_throughput", "Output tok/s", "tokens/s",
    "Completion tokens of successful requests that started in the window / window.",
    aliases="aiperf output_token_throughput; vLLM output_throughput", column="output tok/s",
    better="higher", short_header="out tok/s")
REQUEST_THROUGHPUT = Metric(
    "request_throughput", "Requests/s", "requests/s",
    "Successful requests that started in the window / window.",
    aliases="aiperf request_throughput; vLLM request_throughput", column="requests/s",
    better="higher", short_header="req/s")
ACHIEVED_CONCURRENCY = Metric(
    "achieved_concurrency", "Achieved concurrency", "requests",
    "Time-weighted mean number of LLM requests in flight over the window (request time "
    "inside the window / window); below the configured level because each trial also spends "
    "time in tools and set-up.",
    column="requests in flight", better=None, short_header="achieved conc.")
CONFIGURED_CONCURRENCY = Metric(
    "configured_concurrency", "Configured concurrency", "trials",
    "Concurrent trials Harbor was asked to run (n_concurrent_trials; the sweep level).",
    column="configured", better=None)
TRIAL_CONCURRENCY = Metric(
    "achieved_trial_concurrency", "Achieved trial concurrency", "trials",
    "Time-weighted mean number of trials running (slots busy) over the window; without a "
    "steady window, Σ trial durations / each run's first trial start to last trial end.",
    column="trials running", better=None)
ACHIEVED_SHARE = Metric(
    "achieved_trial_share", "Achieved / configured", "share",
    "Achieved trial concurrency / configured concurrency: how full the level kept its slots. "
    "A capacity search certifies a level only at ≥ 0.90 over a steady window "
    "(analysis/windows.py · MIN_ACHIEVED_SHARE).", column="achieved / configured", better="higher")
ERROR_RATE = Metric("error_rate", "Request error rate", "share",
                    "Failed requests (error, non-2xx, no end) / all requests, both without "
                    "the requests an interruption cancelled (n_cancelled_requests).",
                    column="error rate", better="lower")

METRICS = (WINDOW, STEADY, RUNS, RESUMED, OUTPUT_THROUGHPUT, REQUEST_THROUGHPUT,
           ACHIEVED_CONCURRENCY, CONFIGURED_CONCURRENCY, TRIAL_CONCURRENCY, ACHIEVED_SHARE,
           ERROR_RATE)


def failed_and_counted(requests: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Per request: did it fail, and does it count in an error rate (not cancelled by an
    interruption of its trial)?"""
    failed = ~requests["ok"].to_numpy(dtype=bool)
    if "cancelled" not in requests:
        return failed, np.ones(len(requests), dtype=bool)
    return failed, ~requests["cancelled"].to_numpy(dtype=bool)


def error_rate(requests: pd.DataFrame) -> float:
    failed, counted = failed_and_counted(requests)
    return float((failed & counted).sum() / counted.sum()) if counted.any() else np.nan


def window_seconds(requests: pd.DataFrame) -> float:
    """First start to last end of the requests that ended: the window of one whole run."""
    ends = requests["end_unix_ns"].dropna()
    if ends.empty:
        return np.nan
    start = requests.loc[ends.index, "start_unix_ns"].min()
    span = (int(ends.max()) - int(start)) / 1e9
    return span if span > 0 else np.nan


def whole_run(requests: pd.DataFrame, trials: pd.DataFrame) -> Window:
    """A one-run window over everything: for callers that cut no window of their own."""
    ends = requests["end_unix_ns"].dropna()
    spans: tuple[tuple[int, int], ...] = ()
    if not ends.empty:
        start = int(requests.loc[ends.index, "start_unix_ns"].min())
        if int(ends.max()) > start:
            spans = ((start, int(ends.max())),)
    done = trials.dropna(subset=["started_at", "finished_at"])
    trial_spans: tuple[tuple[int, int], ...] = ()
    if len(done):
        lo = pd.Timestamp(done["started_at"].min()).value
        hi = pd.Timestamp(done["finished_at"].max()).value
        trial_spans = ((lo, hi),)
    return Window(spans, False, 1, trial_spans)


def throughput_metrics(requests: pd.DataFrame, trials: pd.DataFrame, configured: float,
                       window: Window | None = None) -> dict[str, float]:
    """The level's throughput and concurrency figures over `window` (default: the whole run)."""
    window = window if window is not None else whole_run(requests, trials)
    seconds = window.seconds
    inside = in_window(requests, window)
    ok = requests["ok"].to_numpy(dtype=bool) & inside
    tokens = float(np.nansum(requests["completion_tokens"].to_numpy(dtype=float)[ok]))
    trial_conc = trial_concurrency(trials, window)
    return {
        WINDOW.key: seconds,
        STEADY.key: window.steady,
        RUNS.key: float(window.runs),
        OUTPUT_THROUGHPUT.key: tokens / seconds,
        REQUEST_THROUGHPUT.key: ok.sum() / seconds,
        ACHIEVED_CONCURRENCY.key: busy_seconds(requests, window) / seconds,
        CONFIGURED_CONCURRENCY.key: configured,
        TRIAL_CONCURRENCY.key: trial_conc,
        ACHIEVED_SHARE.key: trial_conc / configured if configured else np.nan,
        ERROR_RATE.key: error_rate(requests),
    }
