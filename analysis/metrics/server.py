"""Server-side view of one level from Prometheus scrapes taken before and after it.

The sweep saves the server's `/metrics` text as `c<level>/metrics_before.prom` and
`metrics_after.prom`. Counters and histogram sums/counts are differenced (after − before,
summed over label sets), so the figures cover that level only. Histogram means come from
Δ`_sum` / Δ`_count`. Names are matched by their stem so Dynamo's `dynamo_frontend_…` and
other servers' equivalents both count.
"""

from __future__ import annotations

from pathlib import Path

from analysis.metrics.base import Metric
from contracts.prometheus import parse_samples, totals_by_name

SERVER_REQUESTS = Metric("server_requests", "Server requests", "requests", None,
                         "Δ of the server's request counter over the level.", column="requests")
SERVER_TTFT = Metric("server_ttft_ms_mean", "Server TTFT mean", "ms", False,
                     "Server-measured mean time to first token (Δsum/Δcount of its histogram).",
                     column="TTFT mean (ms)")
SERVER_ITL = Metric("server_itl_ms_mean", "Server ITL mean", "ms", False,
                    "Server-measured mean inter-token latency (Δsum/Δcount).",
                    column="ITL mean (ms)")
SERVER_E2E = Metric("server_e2e_ms_mean", "Server request duration mean", "ms", False,
                    "Server-measured mean request duration (Δsum/Δcount).",
                    column="duration mean (ms)")

METRICS = (SERVER_REQUESTS, SERVER_TTFT, SERVER_ITL, SERVER_E2E)

_HISTOGRAMS = {SERVER_TTFT.key: "time_to_first_token_seconds",
               SERVER_ITL.key: "inter_token_latency_seconds",
               SERVER_E2E.key: "request_duration_seconds"}


def prometheus_totals(text: str) -> dict[str, float]:
    """Sample name → value summed over label sets (comments, bad lines, NaN/Inf skipped)."""
    return totals_by_name(parse_samples(text))


def _find(samples: dict[str, float], suffix: str) -> float | None:
    """Sum of the samples named `…suffix`; the HTTP frontend's own when it has one, so a
    request counted again by router or worker metrics is not counted twice."""
    names = [name for name in samples if name.endswith(suffix)]
    frontend = [name for name in names if "frontend" in name]
    chosen = frontend or names
    return sum(samples[name] for name in chosen) if chosen else None


def server_metrics(before: Path, after: Path) -> dict[str, float]:
    """Per-level server figures; empty if either scrape is missing or unreadable."""
    try:
        a = prometheus_totals(before.read_text(encoding="utf-8", errors="replace"))
        b = prometheus_totals(after.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return {}
    delta = {name: b[name] - a.get(name, 0.0) for name in b}
    out: dict[str, float] = {}
    requests = _find(delta, "requests_total")
    if requests is not None:
        out[SERVER_REQUESTS.key] = requests
    for key, stem in _HISTOGRAMS.items():
        total, count = _find(delta, f"{stem}_sum"), _find(delta, f"{stem}_count")
        if total is not None and count:
            out[key] = total / count * 1000.0
    return out
