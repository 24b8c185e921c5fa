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

Each definition below (`REQUEST_METRICS`) names its unit, the inputs it `requires` and a
`compute` over whole columns; `derive` runs them in order over one row per request. That is
the only derivation: the tables (analysis/trial_rows.py, per chunk of trials read), the live
progress line (`timings`) and `bankbench check` / the benchmarks (`timing_ms`, one record)
all call it. Distributions are over successful requests only (`ok`: no error, an end time,
2xx or no HTTP status).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analysis.metrics.base import Metric, distribution
from contracts.llm_calls import LLMCallRecord

NS_PER_MS = 1_000_000


@dataclass(frozen=True)
class RequestMetric:
    """One per-request definition: `compute(*requires)` over whole columns (pandas, one row
    per request) in `unit`, presented as `metric` after multiplying by `scale`."""

    name: str
    unit: str
    requires: tuple[str, ...]  # raw inputs (`RAW_INPUTS`) or earlier definitions
    compute: Callable[..., pd.Series]
    metric: Metric
    scale: float = 1.0  # unit → the metric's presentation unit


# The raw inputs, one value per request, taken from the record or (`*_read_ns`, `n_reads`)
# from its reads by `read_inputs`; integers, missing as <NA>.
RAW_INPUTS = ("send_ns", "end_ns", "completion_tokens", "first_read_ns", "last_read_ns",
              "first_tool_read_ns", "n_reads")


def _since(start: pd.Series, stop: pd.Series) -> pd.Series:
    # Integer difference first (exact), then float: NaN wherever an end is missing.
    return (stop - start).astype("float64")


def _tpot(ttft: pd.Series, e2e: pd.Series, tokens: pd.Series) -> pd.Series:
    n = tokens.astype("float64")
    return ((e2e - ttft) / (n - 1)).where(n >= 2)


def _per_user(tpot: pd.Series) -> pd.Series:
    return (1e9 / tpot).where(tpot > 0)


def _mean_gap(first: pd.Series, last: pd.Series, n_reads: pd.Series) -> pd.Series:
    gaps = n_reads.astype("float64") - 1
    return _since(first, last).div(gaps).where(gaps >= 1)


TTFT = RequestMetric("ttft_ns", "ns", ("send_ns", "first_read_ns"), _since, Metric(
    "ttft_ms", "TTFT", "ms", False,
    "Send to the first read carrying content, reasoning or a tool-call delta (the empty "
    "role chunk does not count).",
    aliases="aiperf time_to_first_token; vLLM ttft", distribution=True), 1 / NS_PER_MS)
TTFC = RequestMetric("ttfc_ns", "ns", ("send_ns", "first_tool_read_ns"), _since, Metric(
    "ttfc_ms", "Time to first tool call", "ms", False,
    "Send to the first read carrying a tool-call delta; requests whose reply has no tool "
    "call have none. Dynamo's tool parsers send a call whole once it is complete, so for "
    "a reply that is one tool call this equals TTFT and E2E, while the server's TTFT "
    "(server_ttft_ms) counts its first generated token.",
    distribution=True), 1 / NS_PER_MS)
# ITL is pooled over every gap (`gaps`), not one value per request; its per-request column
# is the mean gap, from the first and last read.
ITL = RequestMetric("itl_mean_ns", "ns", ("first_read_ns", "last_read_ns", "n_reads"),
                    _mean_gap, Metric(
    "itl_ms", "ITL", "ms", False,
    "Gap between consecutive content-bearing reads, every gap of every successful request "
    "pooled (a request with many reads weighs more).",
    aliases="vLLM itl", distribution=True), 1 / NS_PER_MS)
E2E = RequestMetric("e2e_ns", "ns", ("send_ns", "end_ns"), _since, Metric(
    "e2e_ms", "E2E latency", "ms", False,
    "Send to the end of the stream (the read carrying [DONE]).",
    aliases="aiperf request_latency; vLLM e2el", distribution=True), 1 / NS_PER_MS)
TPOT = RequestMetric("tpot_ns", "ns", ("ttft_ns", "e2e_ns", "completion_tokens"), _tpot, Metric(
    "tpot_ms", "TPOT", "ms", False,
    "Per request: (E2E − TTFT) / (completion_tokens − 1), token count from the server's usage; "
    "requests with fewer than 2 output tokens (or no usage) have none.",
    aliases="vLLM tpot; aiperf inter_token_latency", distribution=True), 1 / NS_PER_MS)
OUTPUT_TPS = RequestMetric("output_tps_per_user", "tokens/s", ("tpot_ns",), _per_user, Metric(
    "output_tps_per_user", "Output tok/s per request", "tokens/s", True,
    "Per request: 1 s / TPOT, the decode speed one user sees after the first token.",
    aliases="aiperf output_token_throughput_per_user", distribution=True,
    column="Output tokens/s per request"))

REQUEST_METRICS = (TTFT, TTFC, ITL, E2E, TPOT, OUTPUT_TPS)  # in dependency order
METRICS = tuple(m.metric for m in (TTFT, TTFC, ITL, TPOT, E2E, OUTPUT_TPS))  # report order
# The per-request column each definition fills in the tables (`itl_mean_ms` for ITL, whose
# `itl_ms` is the pooled gaps).
COLUMN = {m.name: ("itl_mean_ms" if m is ITL else m.metric.key) for m in REQUEST_METRICS}


@dataclass
class Reads:
    """Every read of a batch of requests, flat and in order: the request each belongs to
    (`request`, positions 0…n−1, ascending), its time and its tool-call characters (0 where
    unknown)."""

    request: np.ndarray
    read_ns: np.ndarray
    tool_call_chars: np.ndarray


def read_inputs(reads: Reads, n_requests: int) -> pd.DataFrame:
    """`first_read_ns`, `last_read_ns`, `first_tool_read_ns`, `n_reads` per request."""
    n_reads = np.bincount(reads.request, minlength=n_requests)[:n_requests]
    start = np.cumsum(n_reads) - n_reads  # reads are in request order
    some = n_reads > 0
    tool = np.flatnonzero(reads.tool_call_chars > 0)
    # The first read with a tool call, per request that has one: reads ascend by request,
    # so np.unique's first index of each request among them is that read.
    has_tool, first = np.unique(reads.request[tool], return_index=True)
    first_tool = np.zeros(n_requests, dtype=np.int64)
    first_tool[has_tool] = reads.read_ns[tool[first]]
    tool_mask = np.ones(n_requests, dtype=bool)
    tool_mask[has_tool] = False

    def at(positions: np.ndarray) -> pd.arrays.IntegerArray:
        values = np.zeros(n_requests, dtype=np.int64)
        values[some] = reads.read_ns[positions[some]]
        return pd.arrays.IntegerArray(values, ~some)

    return pd.DataFrame({
        "first_read_ns": at(start), "last_read_ns": at(start + n_reads - 1),
        "first_tool_read_ns": pd.arrays.IntegerArray(first_tool, tool_mask),
        "n_reads": n_reads.astype(np.int64),
    })


def gaps_ns(reads: Reads) -> np.ndarray:
    """ITL's values: every gap between consecutive reads of one request, in request order."""
    same = reads.request[1:] == reads.request[:-1]
    return np.diff(reads.read_ns)[same]


def derive(raw: pd.DataFrame) -> pd.DataFrame:
    """Every per-request definition over a frame holding `RAW_INPUTS` (one row per request),
    each in its own unit, columns named by `RequestMetric.name`."""
    values: dict[str, pd.Series] = {k: raw[k] for k in RAW_INPUTS}
    for m in REQUEST_METRICS:
        values[m.name] = m.compute(*[values[k] for k in m.requires])
    return pd.DataFrame({m.name: values[m.name] for m in REQUEST_METRICS})


def presented(derived: pd.DataFrame) -> pd.DataFrame:
    """The definitions in their metric's unit, named as the tables name them (`COLUMN`)."""
    return pd.DataFrame({COLUMN[m.name]: derived[m.name].to_numpy(dtype=float) * m.scale
                         if m.scale != 1.0 else derived[m.name].to_numpy(dtype=float)
                         for m in REQUEST_METRICS})


def raw_inputs(records: Sequence[LLMCallRecord]) -> tuple[pd.DataFrame, Reads]:
    """The raw inputs of records in hand (`bankbench check`, progress, benchmarks); the tables
    gather the same columns while reading (analysis/trial_rows.py)."""
    n = [len(r.read_ns) for r in records]
    reads = Reads(
        request=np.repeat(np.arange(len(records)), n),
        read_ns=np.array([t for r in records for t in r.read_ns], dtype=np.int64),
        tool_call_chars=np.array([c for r in records for c in aligned_tool_chars(r)],
                                 dtype=np.int64))
    frame = pd.DataFrame({
        "send_ns": pd.array([r.send_ns for r in records], dtype="Int64"),
        "end_ns": pd.array([r.end_ns for r in records], dtype="Int64"),
        "completion_tokens": pd.array([r.completion_tokens for r in records], dtype="Int64"),
    })
    return pd.concat([frame, read_inputs(reads, len(records))], axis=1), reads


def aligned_tool_chars(record: LLMCallRecord) -> list[int]:
    """Tool-call characters per read, one per `read_ns` (0 where a record predates them)."""
    chars, n = record.read_tool_call_chars, len(record.read_ns)
    return chars if len(chars) == n else (chars + [0] * n)[:n]


def timings(records: Sequence[LLMCallRecord]) -> pd.DataFrame:
    """Every per-request metric of `records`, one row each, as the tables present it
    (`ttft_ms`, `itl_mean_ms`, `e2e_ms`, `tpot_ms`, `output_tps_per_user`, …)."""
    raw, _ = raw_inputs(records)
    return presented(derive(raw))


def request_timing(record: LLMCallRecord) -> dict[str, Any]:
    """Raw inputs and every definition of one record in their own units (None: no value),
    with the record's gaps as `itl_ns`."""
    raw, reads = raw_inputs([record])
    row = pd.concat([raw, derive(raw)], axis=1).iloc[0]
    values = {k: (None if pd.isna(v) else v) for k, v in row.items()}
    values["itl_ns"] = [int(g) for g in gaps_ns(reads)]
    return values


def timing_ms(record: LLMCallRecord) -> dict[str, Any]:
    """Every per-request metric of one record keyed and scaled as presented (`ttft_ms`,
    `itl_ms` (a list of its gaps), `e2e_ms`, `tpot_ms`, `output_tps_per_user`)."""
    raw, reads = raw_inputs([record])
    shown = {k: (None if pd.isna(v) else float(v))
             for k, v in presented(derive(raw)).iloc[0].items()}
    shown["itl_ms"] = [float(g) * ITL.scale for g in gaps_ns(reads)]
    return shown


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
