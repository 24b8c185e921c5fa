"""The `.prom` files of a sweep (`metrics_before.prom`, `metrics_after.prom`): a server's
Prometheus text exposition saved as scraped. One parser for every reader of them.

Standard library only, like the rest of this package's bottom layer.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict

# name, optional {labels}, value; a trailing timestamp is ignored.
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")


def parse_samples(text: str) -> dict[str, float]:
    """Samples keyed by `name{labels}` exactly as written (labels in the server's order).

    Comments and malformed lines are skipped; values parse as float (`NaN`, `+Inf` included).
    """
    samples: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        if not match:
            continue
        try:
            samples[match.group(1) + (match.group(2) or "")] = float(match.group(3))
        except ValueError:
            continue
    return samples


def sample_name(key: str) -> str:
    """`name{labels}` → `name`."""
    return key.partition("{")[0]


def totals_by_name(samples: dict[str, float]) -> dict[str, float]:
    """Metric name → sum over its label sets, finite values only (a NaN gauge adds nothing)."""
    totals: dict[str, float] = defaultdict(float)
    for key, value in samples.items():
        if math.isfinite(value):
            totals[sample_name(key)] += value
    return dict(totals)
