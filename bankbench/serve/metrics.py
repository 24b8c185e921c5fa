"""Prometheus scrape and parse for before/after diffs of a server's `/metrics`."""

from __future__ import annotations

from pathlib import Path

import httpx

# The one parser of the exposition text, re-exported for the serving side's callers.
from contracts.prometheus import parse_samples, sample_name

__all__ = ["metric_sum", "metrics_url", "parse_samples", "scrape"]


def metrics_url(base_or_metrics_url: str) -> str:
    """`http://h:p/v1` or `http://h:p` → `http://h:p/metrics`; a …/metrics URL is kept."""
    url = base_or_metrics_url.rstrip("/")
    if url.endswith("/metrics"):
        return url
    if url.endswith("/v1"):
        url = url[: -len("/v1")]
    return url + "/metrics"


def scrape(base_url_or_metrics_url: str, out_path: Path, timeout: float = 10.0) -> Path:
    """Fetch the Prometheus text exposition and write it to `out_path` unchanged."""
    url = metrics_url(base_url_or_metrics_url)
    resp = httpx.get(url, timeout=timeout)
    resp.raise_for_status()
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(resp.text)
    return out_path


def metric_sum(samples: dict[str, float], name: str) -> float:
    """Sum of every sample of metric `name` across label sets (0.0 when absent)."""
    return sum(v for k, v in samples.items() if sample_name(k) == name)
