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
SLO_RATES = {"error_rate": "Requests that failed or met an overload reply (429/529) / requests.",
             "overload_rate": "Requests the server answered 429 or 529 at least once / requests.",
             "lost_rate": "Trials lost to the server (errors, time-outs) / finished trials.",
             "tool_call_error_rate": "Agent replies in any tool-call integrity class / "
                                     "classified agent replies (analysis/metrics/integrity.py)."}


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


DEFAULT_LOST_RATE = 0.05


class CapacitySearch(BaseModel):
    """The question a capacity search answers: the highest concurrency at which these hold."""

    slos: dict[str, float] = Field(
        default_factory=dict,
        description="Bounds per level, e.g. ttft_p90_ms=500, itl_p90_ms=50, error_rate=0.01 "
        f"(names in docs/capacity.md); lost_rate={DEFAULT_LOST_RATE:g} unless given.")
    max_drop: float = Field(
        0.10, gt=0, le=1,
        description="Decisions pass while the drop of agreement with the reference below the "
        "reference's agreement with itself is shown (one-sided bound) to be under this: 0.10 "
        "= ten points of tool-name F1, about one scenario in five choosing one other tool.")
    alpha: float = Field(
        0.05, gt=0, lt=1,
        description="Chance, across all levels a search can judge (Bonferroni), that a level "
        "whose true drop is at least --max-drop passes anyway.")
    repeats: int = Field(
        2, ge=2, description="Runs of every scenario per level (Harbor attempts; at least 2: "
        "the same-level agreement is the noise floor).")
    agreement_metric: Literal["tool_f1", "arg_agreement"] = Field(
        "tool_f1", description="Consistency metric judged (analysis/consistency.py).")
    min_tsq: float | None = Field(
        None, ge=0, le=1, description="Also require each level's mean TSQ at least this "
        "(an absolute quality floor, as MLPerf's accuracy rule; needs expected-tool labels).")
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
        return {**v, "lost_rate": v.get("lost_rate", DEFAULT_LOST_RATE)}


class Check(BaseModel):
    """One bound judged at one level."""

    name: str
    value: float | None = Field(description="Measured (None: nothing to measure).")
    limit: float
    passed: bool
    confident: bool = Field(
        True, description="A failure shown beyond noise (for the decision check: the drop's "
        "lower confidence bound is at the margin or above; SLO bounds: always).")
    note: str = ""


class Interval(BaseModel):
    mean: float | None
    low: float | None
    high: float | None


class DecisionFigures(BaseModel):
    """A level's decisions against their own noise (analysis/decision_noise.py)."""

    metric: str
    scenarios: int = Field(description="Scenarios compared (≥ 2 usable repeats each side).")
    floor: Interval = Field(description="Agreement between this level's repeats, 95%.")
    baseline: Interval = Field(description="The reference's agreement with itself, 95%.")
    agreement: Interval = Field(description="Agreement with the reference's repeats, 95%.")
    drop: Interval = Field(description="baseline - agreement, 95%.")
    drop_upper: float | None = Field(description="One-sided bound at `confidence`.")
    drop_lower: float | None = Field(description="One-sided lower bound at `confidence`.")
    confidence: float = Field(description="Per level: 1 - alpha/levels_judgeable.")


class Design(BaseModel):
    """What the search's design can claim (bankbench/capacity/plan.py)."""

    scenarios: int
    repeats: int
    levels_judgeable: int = Field(description="The most levels the search can judge (K).")
    confidence: float = Field(description="Per level: 1 - alpha/K.")
    floor: float | None = Field(description="Agreement between repeats assumed or measured.")
    best_bound: float = Field(
        description="The drop's upper bound when every scenario agrees: below --max-drop, "
        "or no level can ever pass.")
    power: float | None = Field(
        description="Chance a level with no real drop passes, at this floor (simulated).")
    search_power: float | None = Field(
        None, description="About power^(levels a search runs to the top, reference aside): "
        "the chance a search with no real change anywhere stops at no level.")
    detectable_drop: float | None = Field(
        description="Smallest drop a level fails with probability ≥ 0.8 (simulated).")


class CapacityStep(BaseModel):
    level: int
    phase: Literal["bracket", "bisect"]
    passed: bool
    reused: bool = Field(description="The level's job was already complete (not run again).")
    checks: list[Check]
    decisions: DecisionFigures | None = None
    seconds: float = Field(description="Wall time of this step (0 when reused).")
    at: datetime


class CapacityRecord(BaseModel):
    search: CapacitySearch
    steps: list[CapacityStep] = Field(default_factory=list)
    capacity: int | None = Field(
        None, description="Highest passing level below the lowest failing one; None: none "
        "passed (or the search has not ended).")
    lowest_failing: int | None = None
    boundary_high: int | None = Field(
        None, description="Lowest level that failed beyond noise: the capacity lies in "
        "[capacity, boundary_high); None: no failure was shown beyond noise.")
    limiting: list[str] = Field(
        default_factory=list, description="The checks that failed at lowest_failing.")
    cliffs: list[str] = Field(
        default_factory=list, description="Figures that jump between adjacent judged levels.")
    design: Design | None = None
    deterministic: bool | None = Field(
        None, description="The server ran batch-invariant kernels (a GPU profile with "
        "deterministic=true); None: not known (a server the search did not start).")
    finished: bool = False
    stopped_because: str | None = Field(
        None, description="Why the search ended: bracketed | max_level | max_minutes | "
        "no passing level.")
