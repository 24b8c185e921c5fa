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

# The HTTP frontend's histograms time what it sends: Dynamo's frontend stamps its first token
# when its tool-call parser releases the first chunk, so for a reply held back until complete
# its TTFT is the client's first chunk, not the engine's first token (server_ttft_ms, per
# request from nvext, is that). Hence "frontend", not "server", in these names.
SERVER_REQUESTS = Metric("server_requests", "Server requests", "requests",
                         "Δ of the server's request counter over the level.", column="requests",
                         better=None)
SERVER_TTFT = Metric("frontend_ttft_ms_mean", "Frontend TTFT mean", "ms",
                     "The HTTP frontend's mean time to the first token it sent (Δsum/Δcount of "
                     "its Prometheus histogram); after any tool-call parser's hold, like the "
                     "client's first chunk.",
                     column="frontend TTFT mean (ms)", better="lower")
SERVER_ITL = Metric("frontend_itl_ms_mean", "Frontend ITL mean", "ms",
                    "The HTTP frontend's mean inter-token latency (Δsum/Δcount).",
                    column="frontend ITL mean (ms)", better="lower")
SERVER_E2E = Metric("frontend_e2e_ms_mean", "Frontend request duration mean", "ms",
                    "The HTTP frontend's mean request duration (Δsum/Δcount).",
                    column="frontend duration mean (ms)", better="lower")

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
