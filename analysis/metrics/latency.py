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
- **the server's own times** (`server_ttft_ns`, `server_total_ns`): Dynamo's per-request
  `nvext.timing` (`ttft_ms`, `total_time_ms`, from its receiving the request), where the
  server reports them; other servers send none.

An agent's reply is often not a stream of tokens: a tool call, or text a tool-call parser held
back, can reach the client in one read when it is complete. Then the client saw no decoding,
and a decode rate from its reads would divide many tokens by a few microseconds. So the
per-request decode figures (TPOT, tokens/s per request) come from the client's reads only
where the reply streamed (≥ 2 reads, and tokens left after the first read), else from the
server's own timing where it reports it, else they are empty.

Each definition below (`REQUEST_METRICS`) names its unit, the inputs it `requires` and a
`compute` over whole columns; `derive` runs them over one row per request, in the order their
requirements give (`DERIVATION_ORDER`, analysis/metrics/request_metric.py). That is
the only derivation: the tables (analysis/trial_rows.py, per chunk of trials read), the live
progress line (`timings`) and `bankbench check` / the benchmarks (`timing_ms`, one record)
all call it. Distributions are over successful requests only (`ok`: no error, an end time,
2xx or no HTTP status).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analysis.metrics.base import Metric, distribution
from analysis.metrics.request_metric import NS_PER_MS, RequestMetric, derivation_order
from contracts.llm_calls import LLMCallRecord

# The raw inputs, one value per request, taken from the record or (`*_read_*`, `n_reads`,
# `reply_chars`) from its reads by `read_inputs`; integers, missing as <NA>, except the
# server's own times (float ns, NaN when not reported).
RAW_INPUTS = ("send_ns", "end_ns", "completion_tokens", "first_read_ns", "last_read_ns",
              "first_tool_read_ns", "n_reads", "first_read_chars", "reply_chars",
              "server_ttft_ns", "server_total_ns")


def _since(start: pd.Series, stop: pd.Series) -> pd.Series:
    # Integer difference first (exact), then float: NaN wherever an end is missing.
    return (stop - start).astype("float64")


def _tokens_after_first_read(tokens: pd.Series, n_reads: pd.Series, first_chars: pd.Series,
                             reply_chars: pd.Series) -> pd.Series:
    """Output tokens that arrived after the first read: all but the first read's, which are
    its share of the reply's characters, rounded down, and at least one (so exactly one for a
    reply streamed about a token per read, as vLLM's and AIPerf's TPOT assume; most of the
    reply for one a parser held back and then released). NaN where the reply did not stream
    (fewer than 2 reads)."""
    n = tokens.astype("float64")
    share = (first_chars.astype("float64") / reply_chars.astype("float64")).where(
        reply_chars.astype("float64") > 0, 0.0)  # sizes unknown (old records): one token
    first = np.maximum(1.0, np.floor(n * share))
    return (n - first).where(n_reads.astype("float64") >= 2)


def _client_tpot(ttft: pd.Series, e2e: pd.Series, tokens: pd.Series, n_reads: pd.Series,
                 first_chars: pd.Series, reply_chars: pd.Series) -> pd.Series:
    after = _tokens_after_first_read(tokens, n_reads, first_chars, reply_chars)
    return ((e2e - ttft) / after).where(after >= 1)


def _server_tpot(server_ttft: pd.Series, server_total: pd.Series,
                 tokens: pd.Series) -> pd.Series:
    n = tokens.astype("float64")
    decode = server_total.astype("float64") - server_ttft.astype("float64")
    return (decode / (n - 1)).where((n >= 2) & (decode > 0))


def _tpot(client: pd.Series, server: pd.Series) -> pd.Series:
    return client.where(client.notna(), server)


def _as_is(values: pd.Series) -> pd.Series:
    return values.astype("float64")


def _per_user(tpot: pd.Series) -> pd.Series:
    return (1e9 / tpot).where(tpot > 0)


def _mean_gap(first: pd.Series, last: pd.Series, n_reads: pd.Series) -> pd.Series:
    gaps = n_reads.astype("float64") - 1
    return _since(first, last).div(gaps).where(gaps >= 1)


TTFT = RequestMetric("ttft_ns", "ns", ("send_ns", "first_read_ns"), _since, Metric(
    "ttft_ms", "TTFT, client first chunk", "ms",
    "Client time to first chunk: send to the first read carrying content, reasoning or a "
    "tool-call delta (the empty role chunk does not count); what the agent waits for. Where "
    "a tool-call parser holds a reply back until it is complete, this is near E2E; the "
    "server's own first token is server_ttft_ms.",
    aliases="aiperf time_to_first_token; vLLM ttft", distribution=True,
    column="TTFT, client first chunk (ms)", better="lower", short_header="first chunk"))
SERVER_TTFT = RequestMetric("server_ttft_ns", "ns", ("server_ttft_ns",), _as_is, Metric(
    "server_ttft_ms", "Server TTFT", "ms",
    "The server's own time to first token, per request: from receiving the request to its "
    "first generated token, before any tool-call parser holds output back (Dynamo's "
    "nvext.timing.ttft_ms, which the agent asks for); empty where the server reports none. "
    "The TTFT an inference engineer compares with vLLM's or AIPerf's on plain text.",
    distribution=True, column="Server TTFT (ms)", better="lower", short_header="server TTFT"))
TTFC = RequestMetric("ttfc_ns", "ns", ("send_ns", "first_tool_read_ns"), _since, Metric(
    "ttfc_ms", "Time to first tool call", "ms",
    "Send to the first read carrying a tool-call delta; requests whose reply has no tool "
    "call have none. Dynamo streams a guided call (tool_choice required or named, JSON "
    "form) as it is decoded, so this is near TTFT; a call its parser finds in free text "
    "(tool_choice auto) is sent whole once complete, so this is near E2E.",
    distribution=True, better="lower"))
# ITL is pooled over every gap (`gaps`), not one value per request; its per-request column
# is the mean gap, from the first and last read.
ITL = RequestMetric("itl_mean_ns", "ns", ("first_read_ns", "last_read_ns", "n_reads"),
                    _mean_gap, Metric(
    "itl_ms", "ITL", "ms",
    "Gap between consecutive content-bearing reads, every gap of every successful request "
    "pooled (a request with many reads weighs more).",
    aliases="vLLM itl", distribution=True, better="lower"))
E2E = RequestMetric("e2e_ns", "ns", ("send_ns", "end_ns"), _since, Metric(
    "e2e_ms", "E2E latency", "ms",
    "Send to the end of the stream (the read carrying [DONE]).",
    aliases="aiperf request_latency; vLLM e2el", distribution=True, better="lower",
    short_header="E2E"))
CLIENT_TPOT = RequestMetric(
    "client_tpot_ns", "ns",
    ("ttft_ns", "e2e_ns", "completion_tokens", "n_reads", "first_read_chars", "reply_chars"),
    _client_tpot, Metric(
        "client_tpot_ms", "TPOT seen by the client", "ms",
        "(E2E − TTFT) / output tokens after the first read, where the reply streamed (≥ 2 "
        "reads); the first read's tokens are its share of the reply's characters × "
        "completion_tokens, rounded down, at least 1 (so completion_tokens − 1, as vLLM's "
        "TPOT, for a reply streamed about a token per read).",
        distribution=True, better="lower"))
SERVER_TPOT = RequestMetric(
    "server_tpot_ns", "ns", ("server_ttft_ns", "server_total_ns", "completion_tokens"),
    _server_tpot, Metric(
        "server_tpot_ms", "Server TPOT", "ms",
        "(server total time − server TTFT) / (completion_tokens − 1), from the server's own "
        "per-request timing (Dynamo nvext); empty where it reports none.",
        distribution=True, better="lower"))
TPOT = RequestMetric("tpot_ns", "ns", ("client_tpot_ns", "server_tpot_ns"), _tpot, Metric(
    "tpot_ms", "TPOT", "ms",
    "Per request, time per output token after the first: the client's (client_tpot_ms) where "
    "the reply streamed, else the server's own (server_tpot_ms); empty where neither "
    "exists (a reply that arrived in one read from a server that reports no timing), never "
    "a division by the microseconds of one read. Token counts from the server's usage.",
    aliases="vLLM tpot; aiperf inter_token_latency", distribution=True, better="lower"))
OUTPUT_TPS = RequestMetric("output_tps_per_user", "tokens/s", ("tpot_ns",), _per_user, Metric(
    "output_tps_per_user", "Output tok/s per request", "tokens/s",
    "Per request: 1 s / TPOT, the decode speed one user sees after the first token; empty "
    "where TPOT is.",
    aliases="aiperf output_token_throughput_per_user", distribution=True,
    column="Output tokens/s per request", better="higher"))

# The requests table's column order; any order computes (see DERIVATION_ORDER).
REQUEST_METRICS = (TTFT, SERVER_TTFT, TTFC, ITL, E2E, CLIENT_TPOT, SERVER_TPOT, TPOT,
                   OUTPUT_TPS)
# Computed in the order their requirements give (`derivation_order`, checked here at import:
# an unknown requirement or a circle stops the import, naming them).
DERIVATION_ORDER = derivation_order(REQUEST_METRICS, RAW_INPUTS)
METRICS = tuple(m.metric for m in (SERVER_TTFT, TTFT, TTFC, ITL, TPOT, E2E, OUTPUT_TPS,
                                   CLIENT_TPOT, SERVER_TPOT))  # report order
# The per-request column each definition fills in the tables (`itl_mean_ms` for ITL, whose
# `itl_ms` is the pooled gaps).
COLUMN = {m.name: ("itl_mean_ms" if m is ITL else m.metric.key) for m in REQUEST_METRICS}


@dataclass
class Reads:
    """Every read of a batch of requests, flat and in order: the request each belongs to
    (`request`, positions 0…n−1, ascending), its time, its tool-call characters and all its
    characters (content, reasoning and tool call; 0 where unknown)."""

    request: np.ndarray
    read_ns: np.ndarray
    tool_call_chars: np.ndarray
    chars: np.ndarray


def read_inputs(reads: Reads, n_requests: int) -> pd.DataFrame:
    """`first_read_ns`, `last_read_ns`, `first_tool_read_ns`, `n_reads`, `first_read_chars`,
    `reply_chars` per request."""
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

    first_chars = np.zeros(n_requests, dtype=np.int64)
    first_chars[some] = reads.chars[start[some]]
    return pd.DataFrame({
        "first_read_ns": at(start), "last_read_ns": at(start + n_reads - 1),
        "first_tool_read_ns": pd.arrays.IntegerArray(first_tool, tool_mask),
        "n_reads": n_reads.astype(np.int64),
        "first_read_chars": first_chars,
        "reply_chars": np.bincount(reads.request, weights=reads.chars,
                                   minlength=n_requests)[:n_requests].astype(np.int64),
    })


def gaps_ns(reads: Reads) -> np.ndarray:
    """ITL's values: every gap between consecutive reads of one request, in request order."""
    same = reads.request[1:] == reads.request[:-1]
    return np.diff(reads.read_ns)[same]


def derive(raw: pd.DataFrame) -> pd.DataFrame:
    """Every per-request definition over a frame holding `RAW_INPUTS` (one row per request),
    each in its own unit, columns named by `RequestMetric.name`."""
    values: dict[str, pd.Series] = {k: raw[k] for k in RAW_INPUTS}
    for m in DERIVATION_ORDER:
        values[m.name] = m.compute(*[values[k] for k in m.requires])
    return pd.DataFrame({m.name: values[m.name] for m in REQUEST_METRICS})


def presented(derived: pd.DataFrame) -> pd.DataFrame:
    """The definitions in their metric's unit, named as the tables name them (`COLUMN`)."""
    return pd.DataFrame({COLUMN[m.name]: m.to_display(derived[m.name].to_numpy(dtype=float))
                         for m in REQUEST_METRICS})


def raw_inputs(records: Sequence[LLMCallRecord]) -> tuple[pd.DataFrame, Reads]:
    """The raw inputs of records in hand (`bankbench check`, progress, benchmarks); the tables
    gather the same columns while reading (analysis/trial_rows.py)."""
    n = [len(r.read_ns) for r in records]
    reads = Reads(
        request=np.repeat(np.arange(len(records)), n),
        read_ns=np.array([t for r in records for t in r.read_ns], dtype=np.int64),
        tool_call_chars=np.array([c for r in records for c in aligned_tool_chars(r)],
                                 dtype=np.int64),
        chars=np.array([c for r in records for c in aligned_chars(r)], dtype=np.int64))
    server = [server_times_ms(r.server) for r in records]
    frame = pd.DataFrame({
        "send_ns": pd.array([r.send_ns for r in records], dtype="Int64"),
        "end_ns": pd.array([r.end_ns for r in records], dtype="Int64"),
        "completion_tokens": pd.array([r.completion_tokens for r in records], dtype="Int64"),
        **server_inputs([t for t, _ in server], [total for _, total in server]),
    })
    return pd.concat([frame, read_inputs(reads, len(records))], axis=1), reads


def _aligned(values: list[int], n: int) -> list[int]:
    return values if len(values) == n else (values + [0] * n)[:n]


def aligned_tool_chars(record: LLMCallRecord) -> list[int]:
    """Tool-call characters per read, one per `read_ns` (0 where a record predates them)."""
    return _aligned(record.read_tool_call_chars, len(record.read_ns))


def aligned_chars(record: LLMCallRecord) -> list[int]:
    """All characters per read (content, reasoning, tool call), one per `read_ns`; 0 where
    unknown (a record from before read sizes)."""
    n = len(record.read_ns)
    if not record.sizes_known:
        return [0] * n
    return [a + b + c for a, b, c in zip(_aligned(record.read_content_chars, n),
                                         _aligned(record.read_reasoning_chars, n),
                                         _aligned(record.read_tool_call_chars, n), strict=True)]


def number(value: Any) -> float | None:
    """A server-reported figure, if it is a number (servers other than Dynamo send none)."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def server_timing(server: dict[str, Any] | None) -> dict[str, Any]:
    """The server's per-request timing object (Dynamo's nvext `timing`), or {}."""
    timing = (server or {}).get("timing")
    return timing if isinstance(timing, dict) else {}


def server_times_ms(server: dict[str, Any] | None) -> tuple[float | None, float | None]:
    """(TTFT, total time) in ms as the server reported them for one request, None if not."""
    timing = server_timing(server)
    return number(timing.get("ttft_ms")), number(timing.get("total_time_ms"))


def server_inputs(ttft_ms: Sequence[float | None], total_ms: Sequence[float | None]
                  ) -> dict[str, np.ndarray]:
    """The server-time raw inputs (float ns, NaN where not reported) from ms values."""
    def ns(values: Sequence[float | None]) -> np.ndarray:
        return np.array([np.nan if v is None else v for v in values], dtype=float) * NS_PER_MS

    return {"server_ttft_ns": ns(ttft_ms), "server_total_ns": ns(total_ms)}


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
    shown["itl_ms"] = [float(g) for g in ITL.to_display(gaps_ns(reads))]
    return shown


def describe(record: LLMCallRecord) -> str:
    """One line of a request's timing, as `bankbench check` prints it."""
    shown = timing_ms(record)
    ttft, e2e, gaps = shown["ttft_ms"], shown["e2e_ms"], shown["itl_ms"]
    server_ttft, _ = server_times_ms(record.server)
    server = "" if server_ttft is None else f", server TTFT {server_ttft:.1f} ms"
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
