"""Prometheus scrape and parse for before/after diffs of a server's `/metrics`."""

from __future__ import annotations

import re
from pathlib import Path

import httpx

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")


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


def parse_prom(text: str) -> dict[str, float]:
    """Samples keyed by `name{labels}` exactly as written (labels in the server's order).

    Comments and malformed lines are skipped; values parse as float (`NaN`, `+Inf` included).
    """
    samples: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m:
            continue
        try:
            samples[m.group(1) + (m.group(2) or "")] = float(m.group(3))
        except ValueError:
            continue
    return samples


def metric_sum(samples: dict[str, float], name: str) -> float:
    """Sum of every sample of metric `name` across label sets (0.0 when absent)."""
    return sum(v for k, v in samples.items() if k == name or k.startswith(name + "{"))
