"""The requests table's columns, each declared once: its name (the table's order), its dtype
and where its value comes from.

- `record`: copied from the `llm_calls.jsonl` record as it is (`LLMCallRecord.<name>`);
- `read`: worked out from one record while reading it (`trial_rows._request_values`);
- `timing`: derived per chunk from the raw times (`analysis.metrics.latency.derive`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from analysis.metrics import integrity


@dataclass(frozen=True)
class Column:
    name: str
    dtype: Literal["float", "int", "object"]
    source: Literal["record", "read", "timing"]


def _timing(*names: str) -> list[Column]:
    return [Column(name, "float", "timing") for name in names]


COLUMNS: tuple[Column, ...] = (
    Column("request_id", "object", "record"), Column("role", "object", "record"),
    Column("attempt", "int", "record"), Column("turn", "int", "record"),
    Column("step", "int", "record"), Column("model", "object", "record"),
    Column("session_id", "object", "record"), Column("worker_id", "object", "read"),
    Column("start_unix_ns", "int", "record"),
    *_timing("end_unix_ns", "ttft_ms", "ttfc_ms", "e2e_ms", "tpot_ms", "client_tpot_ms",
             "server_tpot_ms", "output_tps_per_user"),
    Column("n_itl", "int", "timing"), *_timing("itl_mean_ms"),
    Column("content_chars", "float", "read"), Column("reasoning_chars", "float", "read"),
    Column("tool_call_chars", "float", "read"),
    Column("prompt_tokens", "float", "record"), Column("completion_tokens", "float", "record"),
    Column("cached_tokens", "float", "record"), Column("token_source", "object", "record"),
    Column("finish_reason", "object", "record"), Column("http_status", "float", "record"),
    Column("retries", "int", "record"), Column("overloaded", "int", "record"),
    Column("error_type", "object", "read"), Column("server_ttft_ms", "float", "read"),
    Column("server_total_ms", "float", "read"), Column("send_to_received_ms", "float", "read"),
    *(Column(name, "float", "read") for name in integrity.COLUMNS),
)
REQ_COLUMNS = tuple(c.name for c in COLUMNS)
FLOAT_REQ = frozenset(c.name for c in COLUMNS if c.dtype == "float")
INT_REQ = frozenset(c.name for c in COLUMNS if c.dtype == "int")
# What reading one record fills, in table order; the rest is derived per chunk.
RECORD_COLUMNS = tuple(c for c in COLUMNS if c.source != "timing")
