"""Goodput: the part of the traffic that met a service-level objective (`--slo`).

A request meets the SLO when it succeeded and every bound given holds: TTFT ≤ `ttft_ms`,
TPOT ≤ `itl_ms` (the request's mean time per output token, aiperf's per-request
inter_token_latency; requests with < 2 output tokens pass this bound), e2e ≤ `e2e_s`.
A scenario (trial) meets it when all of its requests do.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field

from analysis.metrics.base import Metric

GOODPUT = Metric("goodput", "Goodput", "requests/s",
                 "Requests meeting the SLO / measured window.", aliases="aiperf goodput",
                 column="goodput (req/s)", better="higher")
GOODPUT_SHARE = Metric("goodput_request_share", "Requests within SLO", "share",
                       "Requests meeting the SLO / all requests (failed ones count as missing).",
                       column="requests within SLO", better="higher")
GOODPUT_SCENARIOS = Metric(
    "goodput_scenario_share", "Scenarios within SLO", "share",
    "Finished trials with ≥ 1 request whose every request met the SLO / those trials.",
    column="scenarios within SLO", better="higher")

METRICS = (GOODPUT, GOODPUT_SHARE, GOODPUT_SCENARIOS)

_KEYS = {"ttft_ms", "itl_ms", "e2e_s"}


class SLO(BaseModel):
    """Latency bounds for goodput; a bound left out is not checked."""

    ttft_ms: float | None = Field(None, gt=0, description="Largest acceptable TTFT, ms.")
    itl_ms: float | None = Field(None, gt=0, description="Largest acceptable TPOT, ms.")
    e2e_s: float | None = Field(None, gt=0, description="Largest acceptable e2e latency, s.")

    def __str__(self) -> str:
        parts = [f"{k}={v:g}" for k, v in self.model_dump().items() if v is not None]
        return ",".join(parts) or "(none)"


def parse_slo(text: str) -> SLO:
    """`ttft_ms=500,itl_ms=50,e2e_s=30` → SLO; raises ValueError naming the bad part."""
    bounds: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or key not in _KEYS:
            raise ValueError(f"--slo: '{part}' is not one of {', '.join(sorted(_KEYS))}=NUMBER")
        try:
            bounds[key] = float(value)
        except ValueError:
            raise ValueError(f"--slo: '{part}': '{value}' is not a number") from None
        if bounds[key] <= 0:
            raise ValueError(f"--slo: '{part}': the bound must be > 0")
    if not bounds:
        raise ValueError("--slo: give at least one of ttft_ms=…, itl_ms=…, e2e_s=…")
    return SLO(**bounds)


def meets_slo(requests: pd.DataFrame, slo: SLO) -> pd.Series:
    good = requests["ok"].astype(bool)
    if slo.ttft_ms is not None:
        good &= requests["ttft_ms"].le(slo.ttft_ms)
    if slo.itl_ms is not None:
        good &= requests["tpot_ms"].isna() | requests["tpot_ms"].le(slo.itl_ms)
    if slo.e2e_s is not None:
        good &= requests["e2e_ms"].le(slo.e2e_s * 1000.0)
    return good


def goodput_metrics(requests: pd.DataFrame, trials: pd.DataFrame, slo: SLO,
                    window_s: float) -> dict[str, float]:
    good = meets_slo(requests, slo)
    n = len(requests)
    finished = trials[(trials["status"] != "running") & (trials["n_requests"] > 0)]
    keys = ["source", "job", "trial"]
    missed = requests.loc[~good, keys].drop_duplicates().assign(_missed=True)
    trial_good = finished[keys].merge(missed, on=keys, how="left")["_missed"].isna()
    return {
        GOODPUT.key: float(good.sum()) / window_s if window_s else np.nan,
        GOODPUT_SHARE.key: float(good.mean()) if n else np.nan,
        GOODPUT_SCENARIOS.key: float(trial_good.mean()) if len(trial_good) else np.nan,
    }
