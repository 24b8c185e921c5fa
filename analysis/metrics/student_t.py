"""Student's t distribution, the two pieces of it the analysis uses (numpy has none, and the
project carries no scipy): a quantile for the decision statistics' intervals and an exact
two-sided tail for the long-run latency test."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np


def t_quantile(p: float, df: float) -> float:
    """Student's t quantile (Cornish-Fisher expansion around the normal; within 1 % of the
    exact value for df ≥ 3 at the tails used here: numpy has no t distribution)."""
    z = NormalDist().inv_cdf(p)
    if not math.isfinite(df) or df <= 0:
        return z
    return (z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)
            + (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / (384 * df ** 3))


def t_two_sided(t: float, df: int) -> float:
    """P(|T| >= |t|) for Student's t on integer `df` (Abramowitz & Stegun 26.7.3-4)."""
    if np.isnan(t):
        return np.nan
    theta = math.atan(abs(t) / math.sqrt(df))
    c2, s = math.cos(theta) ** 2, math.sin(theta)
    if df % 2:  # odd
        term, series = 1.0, 1.0 if df > 1 else 0.0
        for k in range(1, (df - 1) // 2):
            term *= c2 * (2 * k) / (2 * k + 1)
            series += term
        inside = (2 / math.pi) * (theta + (s * math.cos(theta) * series if df > 1 else 0.0))
    else:
        term, series = 1.0, 1.0
        for k in range(1, df // 2):
            term *= c2 * (2 * k - 1) / (2 * k)
            series += term
        inside = s * series
    return float(min(1.0, max(0.0, 1.0 - inside)))
