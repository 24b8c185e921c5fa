"""`<sweep>/capacity.json`: what a capacity search looked for and every step it took.

Written by bankbench/capacity/search.py after every step (a resumed search reads its options
back from it); the sweep it runs in is an ordinary sweep directory (sweep.json, `c<level>/`),
so `bankbench report` reads it like any other.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, field_validator

CAPACITY_FILE = "capacity.json"
CAPACITY_PLOT = "capacity.png"

# SLO name stem -> summary column stem (analysis/metrics). The client's TTFT is the first
# content-bearing read; `ttfc` the first read carrying a tool call; `server_ttft` the server's
# own first-token time (Dynamo nvext);
# AIPerf's names are accepted for the same quantities (its inter_token_latency is TPOT).
SLO_METRICS = {
    "ttft": "ttft_ms", "time_to_first_token": "ttft_ms", "server_ttft": "server_ttft_ms",
    "ttfc": "ttfc_ms", "time_to_first_tool_call": "ttfc_ms",
    "itl": "itl_ms",
    "tpot": "tpot_ms", "inter_token_latency": "tpot_ms",
    "e2e": "e2e_ms", "request_latency": "e2e_ms",
}
SLO_STATS = ("mean", "p50", "p90", "p95", "p99")
SLO_RATES = {"error_rate": "Failed requests / requests.",
             "lost_rate": "Trials lost (timeouts, errors) / finished trials."}


def slo_column(name: str) -> str:
    """`ttft_p90_ms` -> `ttft_ms_p90` (the summary column); rates map to themselves.
    Raises ValueError naming the accepted forms."""
    if name in SLO_RATES:
        return name
    stem, _, rest = name.rpartition("_ms")
    metric, _, stat = stem.rpartition("_")
    if rest == "" and metric in SLO_METRICS and stat in SLO_STATS:
        return f"{SLO_METRICS[metric]}_{stat}"
    raise ValueError(
        f"--slo {name!r}: expected <metric>_<stat>_ms with metric one of "
        f"{', '.join(sorted(SLO_METRICS))} and stat one of {', '.join(SLO_STATS)} "
        f"(e.g. ttft_p90_ms), or one of {', '.join(SLO_RATES)}")


class CapacitySearch(BaseModel):
    """The question a capacity search answers: the highest concurrency at which these hold."""

    slos: dict[str, float] = Field(
        default_factory=dict,
        description="Bounds per level, e.g. ttft_p90_ms=500, itl_p90_ms=50, error_rate=0.01 "
        "(names in bankbench/capacity/slo.py).")
    min_agreement: float = Field(
        0.9, ge=0, le=1,
        description="Decisions stay consistent while the lower end of the 95% interval of "
        "the agreement metric is at least this.")
    agreement_metric: Literal["tool_f1", "arg_agreement"] = Field(
        "tool_f1", description="Consistency metric judged (analysis/consistency.py).")
    start: int = Field(1, ge=1, description="First level tried; doubled until a level fails.")
    max_level: int = Field(256, ge=1, description="Highest level tried.")
    max_minutes: float | None = Field(
        None, gt=0, description="No new level starts after this many minutes of the search.")
    gpus: int | None = Field(None, ge=1, description="GPUs serving: also say N per GPU.")
    reference: str | None = Field(
        None, description="Sweep or job dir whose lowest level is the consistency reference "
        "(default: the lowest level of this search).")

    @field_validator("slos")
    @classmethod
    def _known(cls, v: dict[str, float]) -> dict[str, float]:
        for name in v:
            slo_column(name)
        return v


class Check(BaseModel):
    """One bound judged at one level."""

    name: str
    value: float | None = Field(description="Measured (None: nothing to measure).")
    limit: float
    passed: bool
    note: str = ""


class CapacityStep(BaseModel):
    level: int
    phase: Literal["bracket", "bisect"]
    passed: bool
    reused: bool = Field(description="The level's job was already complete (not run again).")
    checks: list[Check]
    seconds: float = Field(description="Wall time of this step (0 when reused).")
    at: datetime


class CapacityRecord(BaseModel):
    search: CapacitySearch
    steps: list[CapacityStep] = Field(default_factory=list)
    capacity: int | None = Field(
        None, description="Highest passing level below the lowest failing one; None: none "
        "passed (or the search has not ended).")
    lowest_failing: int | None = None
    finished: bool = False
    stopped_because: str | None = Field(
        None, description="Why the search ended: bracketed | max_level | max_minutes | "
        "no passing level.")
