"""Per-request latency: every timing metric, derived from the raw times of `llm_calls.jsonl`.

Where the clock starts and stops (all `time.perf_counter_ns()` on the client, integers):
- **send** (`send_ns`): the request is handed to the HTTP transport (httpx's request hook),
  after the agent has encoded the history and tools, before a pooled connection is taken or
  opened and the request written. The harness's own work and event-loop waits before it are
  not charged to the server.
- **read** (`read_ns[i]`): a network read returned bytes holding at least one content,
  reasoning or tool-call delta. The role-only first chunk and the closing finish/usage chunks
  do not count; all events of one read share its stamp.
- **end** (`end_ns`): the read that carried `[DONE]` (or the end of the body without one).

Each definition below names its unit and what it is computed from. `request_timing` composes
them for one record (`bankbench check`, the benchmarks); the tables and the live progress line
call the same functions in their own loops. Distributions are over successful requests only
(`ok`: no error, an end time, 2xx or no HTTP status).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analysis.metrics.base import Metric, distribution
from contracts.llm_calls import LLMCallRecord

NS_PER_MS = 1_000_000


@dataclass(frozen=True)
class RequestMetric:
    """One per-request definition: `compute(*requires)` in `unit`, presented as `metric`."""

    name: str
    unit: str
    requires: tuple[str, ...]  # raw record fields or earlier definitions
    compute: Callable[..., Any]
    metric: Metric
    scale: float = 1.0  # unit → the metric's presentation unit


def ttft_ns(send_ns: int | None, read_ns: list[int]) -> int | None:
    return read_ns[0] - send_ns if send_ns is not None and read_ns else None


def ttfc_ns(send_ns: int | None, read_ns: list[int],
            read_tool_call_chars: list[int]) -> int | None:
    """Send to the first read carrying a tool-call delta; None without one (or for records
    written before read sizes were kept)."""
    if send_ns is None:
        return None
    first = next((i for i, n in enumerate(read_tool_call_chars) if n > 0), None)
    return None if first is None or first >= len(read_ns) else read_ns[first] - send_ns


def itl_ns(read_ns: list[int]) -> list[int]:
    return [b - a for a, b in zip(read_ns, read_ns[1:], strict=False)]


def e2e_ns(send_ns: int | None, end_ns: int | None) -> int | None:
    return end_ns - send_ns if send_ns is not None and end_ns is not None else None


def tpot_ns(ttft: int | None, e2e: int | None, completion_tokens: int | None) -> float | None:
    if ttft is None or e2e is None or completion_tokens is None or completion_tokens < 2:
        return None
    return (e2e - ttft) / (completion_tokens - 1)


def output_tps_per_user(tpot: float | None) -> float | None:
    return 1e9 / tpot if tpot is not None and tpot > 0 else None


TTFT = RequestMetric("ttft_ns", "ns", ("send_ns", "read_ns"), ttft_ns, Metric(
    "ttft_ms", "TTFT", "ms", False,
    "Send to the first read carrying content, reasoning or a tool-call delta (the empty "
    "role chunk does not count).",
    aliases="aiperf time_to_first_token; vLLM ttft", distribution=True), 1 / NS_PER_MS)
TTFC = RequestMetric(
    "ttfc_ns", "ns", ("send_ns", "read_ns", "read_tool_call_chars"), ttfc_ns, Metric(
        "ttfc_ms", "Time to first tool call", "ms", False,
        "Send to the first read carrying a tool-call delta; requests whose reply has no tool "
        "call have none. Dynamo's tool parsers send a call whole once it is complete, so for "
        "a reply that is one tool call this equals TTFT and E2E, while the server's TTFT "
        "(server_ttft_ms) counts its first generated token.",
        distribution=True), 1 / NS_PER_MS)
ITL = RequestMetric("itl_ns", "ns", ("read_ns",), itl_ns, Metric(
    "itl_ms", "ITL", "ms", False,
    "Gap between consecutive content-bearing reads, every gap of every successful request "
    "pooled (a request with many reads weighs more).",
    aliases="vLLM itl", distribution=True), 1 / NS_PER_MS)
E2E = RequestMetric("e2e_ns", "ns", ("send_ns", "end_ns"), e2e_ns, Metric(
    "e2e_ms", "E2E latency", "ms", False,
    "Send to the end of the stream (the read carrying [DONE]).",
    aliases="aiperf request_latency; vLLM e2el", distribution=True), 1 / NS_PER_MS)
TPOT = RequestMetric("tpot_ns", "ns", ("ttft_ns", "e2e_ns", "completion_tokens"), tpot_ns, Metric(
    "tpot_ms", "TPOT", "ms", False,
    "Per request: (E2E − TTFT) / (completion_tokens − 1), token count from the server's usage; "
    "requests with fewer than 2 output tokens (or no usage) have none.",
    aliases="vLLM tpot; aiperf inter_token_latency", distribution=True), 1 / NS_PER_MS)
OUTPUT_TPS = RequestMetric(
    "output_tps_per_user", "tokens/s", ("tpot_ns",), output_tps_per_user, Metric(
        "output_tps_per_user", "Output tok/s per request", "tokens/s", True,
        "Per request: 1 s / TPOT, the decode speed one user sees after the first token.",
        aliases="aiperf output_token_throughput_per_user", distribution=True))

REQUEST_METRICS = (TTFT, TTFC, ITL, E2E, TPOT, OUTPUT_TPS)  # in dependency order
METRICS = tuple(m.metric for m in (TTFT, TTFC, ITL, TPOT, E2E, OUTPUT_TPS))  # report order


def request_timing(record: LLMCallRecord) -> dict[str, Any]:
    """Raw inputs and every per-request definition of one record, in their own units."""
    values: dict[str, Any] = {
        "send_ns": record.send_ns, "read_ns": record.read_ns,
        "read_tool_call_chars": record.read_tool_call_chars,
        "end_ns": record.end_ns, "completion_tokens": record.completion_tokens,
    }
    for m in REQUEST_METRICS:
        values[m.name] = m.compute(*[values[k] for k in m.requires])
    return values


def presented(values: dict[str, Any], m: RequestMetric) -> Any:
    """A definition's value in its metric's unit (ms for times): None stays None."""
    value = values[m.name]
    if value is None or m.scale == 1.0:
        return value
    if isinstance(value, list):
        return [v * m.scale for v in value]
    return value * m.scale


def timing_ms(record: LLMCallRecord) -> dict[str, Any]:
    """Every per-request metric of one record keyed and scaled as presented (`ttft_ms`,
    `itl_ms` (a list), `e2e_ms`, `tpot_ms`, `output_tps_per_user`)."""
    values = request_timing(record)
    return {m.metric.key: presented(values, m) for m in REQUEST_METRICS}


def describe(record: LLMCallRecord) -> str:
    """One line of a request's timing, as `bankbench check` prints it."""
    shown = timing_ms(record)
    ttft, e2e, gaps = shown["ttft_ms"], shown["e2e_ms"], shown["itl_ms"]
    server = ""
    if record.server and isinstance(record.server.get("timing"), dict):
        server_ttft = record.server["timing"].get("ttft_ms")
        if isinstance(server_ttft, int | float):
            server = f", server TTFT {server_ttft:.1f} ms"
    return (f"TTFT {_ms(ttft)}, median ITL {_ms(float(np.median(gaps)) if gaps else None)}, "
            f"e2e {_ms(e2e)}, tokens {_tokens(record.prompt_tokens)} in / "
            f"{_tokens(record.completion_tokens)} out{server}")


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f} ms"


def _tokens(value: int | None) -> str:
    return "unknown" if value is None else str(value)


def latency_metrics(requests: pd.DataFrame, itl_ms: np.ndarray) -> dict[str, float]:
    """`<key>_<stat>` for one group; `itl_ms` holds the pooled gaps of its ok requests."""
    ok = requests["ok"].to_numpy(dtype=bool)
    values = {m.metric: requests[m.metric.key].to_numpy(dtype=float)[ok]
              for m in REQUEST_METRICS if m is not ITL}
    values[ITL.metric] = np.asarray(itl_ms, dtype=float)
    out: dict[str, float] = {}
    for metric in METRICS:
        for stat, x in distribution(values[metric]).items():
            out[f"{metric.key}_{stat}"] = x
    return out
