"""Per-request latency distributions: TTFT, ITL, TPOT, end-to-end, per-request decode speed.

All over successful requests only (`ok`: no error, an end time, 2xx or no HTTP status).
Client-side times from `perf_counter_ns()` as recorded in llm_calls.jsonl.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.metrics.base import Metric, distribution

TTFT = Metric(
    "ttft_ms", "TTFT", "ms", False,
    "Time from sending the request to the first chunk that carries content or a tool-call "
    "delta (the empty role chunk does not count).",
    aliases="aiperf time_to_first_token; vLLM ttft", distribution=True)
ITL = Metric(
    "itl_ms", "ITL", "ms", False,
    "Gap between consecutive content-bearing chunks, every gap of every successful request "
    "pooled (a request with many chunks weighs more).",
    aliases="vLLM itl", distribution=True)
TPOT = Metric(
    "tpot_ms", "TPOT", "ms", False,
    "Per request: (e2e − TTFT) / (completion_tokens − 1), token count from the server's usage; "
    "requests with fewer than 2 output tokens have none.",
    aliases="vLLM tpot; aiperf inter_token_latency", distribution=True)
E2E = Metric(
    "e2e_ms", "E2E latency", "ms", False,
    "Time from sending the request to the end of its stream.",
    aliases="aiperf request_latency; vLLM e2el", distribution=True)
OUTPUT_TPS_PER_USER = Metric(
    "output_tps_per_user", "Output tok/s per request", "tokens/s", True,
    "Per request: 1000 / TPOT, the decode speed one user sees after the first token.",
    aliases="aiperf output_token_throughput_per_user", distribution=True)

METRICS = (TTFT, ITL, TPOT, E2E, OUTPUT_TPS_PER_USER)


def latency_metrics(requests: pd.DataFrame, itl_ms: np.ndarray) -> dict[str, float]:
    """`<key>_<stat>` for one group; `itl_ms` holds the pooled gaps of its ok requests."""
    ok = requests["ok"].to_numpy(dtype=bool)
    values = {
        TTFT: requests["ttft_ms"].to_numpy(dtype=float)[ok],
        ITL: np.asarray(itl_ms, dtype=float),
        TPOT: requests["tpot_ms"].to_numpy(dtype=float)[ok],
        E2E: requests["e2e_ms"].to_numpy(dtype=float)[ok],
        OUTPUT_TPS_PER_USER: requests["output_tps_per_user"].to_numpy(dtype=float)[ok],
    }
    out: dict[str, float] = {}
    for metric, v in values.items():
        for stat, x in distribution(v).items():
            out[f"{metric.key}_{stat}"] = x
    return out
