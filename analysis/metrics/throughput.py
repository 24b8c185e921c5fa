"""Aggregate throughput and achieved concurrency over the measured window of one group.

The measured window runs from the earliest request start to the latest request end of the
group (one Harbor job = one concurrency level), failed requests included.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.metrics.base import Metric

WINDOW = Metric("window_s", "Measured window", "s", None,
                "Earliest request start to latest request end.", column="window (s)")
OUTPUT_THROUGHPUT = Metric(
    "output_token_throughput", "Output tok/s", "tokens/s", True,
    "Completion tokens of successful requests / measured window.",
    aliases="aiperf output_token_throughput; vLLM output_throughput", column="output tok/s")
REQUEST_THROUGHPUT = Metric(
    "request_throughput", "Requests/s", "requests/s", True,
    "Successful requests / measured window.",
    aliases="aiperf request_throughput; vLLM request_throughput", column="requests/s")
ACHIEVED_CONCURRENCY = Metric(
    "achieved_concurrency", "Achieved concurrency", "requests", None,
    "Time-weighted mean number of LLM requests in flight over the window (Σ e2e / window); "
    "below the configured level because each trial also spends time in tools and set-up.",
    column="requests in flight")
CONFIGURED_CONCURRENCY = Metric(
    "configured_concurrency", "Configured concurrency", "trials", None,
    "Concurrent trials Harbor was asked to run (n_concurrent_trials; the sweep level).",
    column="configured")
TRIAL_CONCURRENCY = Metric(
    "achieved_trial_concurrency", "Achieved trial concurrency", "trials", None,
    "Time-weighted mean number of trials running: Σ trial durations / (last end − first start).",
    column="trials running")
ERROR_RATE = Metric("error_rate", "Request error rate", "share", False,
                    "Failed requests (error, non-2xx, no end) / all requests, both without "
                    "the requests an interruption cancelled (n_cancelled_requests).",
                    column="error rate")

METRICS = (WINDOW, OUTPUT_THROUGHPUT, REQUEST_THROUGHPUT, ACHIEVED_CONCURRENCY,
           CONFIGURED_CONCURRENCY, TRIAL_CONCURRENCY, ERROR_RATE)


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
    ends = requests["end_unix_ns"].dropna()
    if ends.empty:
        return np.nan
    start = requests.loc[ends.index, "start_unix_ns"].min()
    span = (int(ends.max()) - int(start)) / 1e9
    return span if span > 0 else np.nan


def throughput_metrics(requests: pd.DataFrame, trials: pd.DataFrame,
                       configured: float) -> dict[str, float]:
    window = window_seconds(requests)
    ok = requests["ok"].to_numpy(dtype=bool)
    tokens = float(np.nansum(requests["completion_tokens"].to_numpy(dtype=float)[ok]))
    busy_s = float(np.nansum(requests["e2e_ms"].to_numpy(dtype=float))) / 1000.0
    done = trials.dropna(subset=["started_at", "finished_at"])
    trial_conc = np.nan
    if len(done):
        span = (done["finished_at"].max() - done["started_at"].min()).total_seconds()
        if span > 0:
            trial_conc = float((done["finished_at"] - done["started_at"]).dt.total_seconds()
                               .sum() / span)
    return {
        WINDOW.key: window,
        OUTPUT_THROUGHPUT.key: tokens / window,
        REQUEST_THROUGHPUT.key: ok.sum() / window,
        ACHIEVED_CONCURRENCY.key: busy_s / window,
        CONFIGURED_CONCURRENCY.key: configured,
        TRIAL_CONCURRENCY.key: trial_conc,
        ERROR_RATE.key: error_rate(requests),
    }
