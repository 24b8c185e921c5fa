"""`<sweep>/capacity.json`: what a capacity search looked for and every step it took.

Written by bankbench/capacity/search.py after every step (a resumed search reads its options
back from it); the sweep it runs in is an ordinary sweep directory (sweep.json, `c<level>/`),
so `bankbench report` reads it like any other.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator

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
SLO_STATS = ("mean", "p10", "p50", "p90", "p95", "p99")
# Per-request rates (no unit suffix): a floor bounds them (`output_tps_per_user_p10>=20`, the
# slowest decile's decode speed); AIPerf's name is accepted for the same quantity.
SLO_RATE_METRICS = {"output_tps_per_user": "output_tps_per_user",
                    "output_token_throughput_per_user": "output_tps_per_user"}
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
    metric, _, stat = name.rpartition("_")
    if metric in SLO_RATE_METRICS and stat in SLO_STATS:
        return f"{SLO_RATE_METRICS[metric]}_{stat}"
    raise ValueError(
        f"--slo {name!r}: expected <metric>_<stat>_ms with metric one of "
        f"{', '.join(sorted(SLO_METRICS))} and stat one of {', '.join(SLO_STATS)} "
        f"(e.g. ttft_p90_ms), <rate>_<stat> with rate one of {', '.join(SLO_RATE_METRICS)} "
        f"(e.g. output_tps_per_user_p10), or one of {', '.join(SLO_RATES)}")


DEFAULT_LOST_RATE = 0.05
DEFAULT_REFERENCE_LEVEL = 2  # the lowest batched level: it carries the deployment's own noise
STATISTIC = ("divergence of decision distributions: per scenario (A(level, level) + "
             "A(reference, reference))/2 - A(level, reference), A the mean agreement of two "
             "runs' tool calls; mean over scenarios, one-sided t bound")

Verdict = Literal["pass", "fail", "inconclusive"]


class Tier(BaseModel):
    """A named set of SLO bounds (`--tier NAME=SPEC`): the levels are judged against each."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    slos: dict[str, float] = Field(default_factory=dict, description="Upper bounds (≤).")
    floors: dict[str, float] = Field(default_factory=dict, description="Lower bounds (≥), "
                                     "e.g. output_tps_per_user_p10=20.")

    @field_validator("slos", "floors")
    @classmethod
    def _names(cls, v: dict[str, float]) -> dict[str, float]:
        for name in v:
            slo_column(name)
        return v


SINGLE_TIER = "slo"  # the one tier of a search given --slo alone


class CapacitySearch(BaseModel):
    """The question a capacity search answers: the highest concurrency at which these hold."""

    model_config = ConfigDict(populate_by_name=True)

    slos: dict[str, float] = Field(
        default_factory=dict,
        description="Bounds per level, e.g. ttft_p90_ms=500, itl_p90_ms=50, error_rate=0.01 "
        f"(names in docs/capacity.md); lost_rate={DEFAULT_LOST_RATE:g} unless given.")
    max_divergence: float = Field(
        0.10, gt=0, le=1, validation_alias=AliasChoices("max_divergence", "max_drop"),
        description="Decisions are intact while the divergence of a level's decisions from "
        "the reference's (kernel two-sample distance of the two distributions, in points of "
        "tool-name F1) is shown, by its one-sided bound, to be under this: 0.10 = one "
        "scenario in ten switching to a wholly other trajectory, or one in five to one that "
        "shares half its tools.")
    alpha: float = Field(
        0.05, gt=0, lt=1,
        description="Chance, across every level a search can judge and every look at each "
        "(Bonferroni), that a level whose true divergence is at least --max-divergence "
        "passes anyway.")
    repeats: int = Field(
        2, ge=2, description="Runs of every scenario per level at its first look (Harbor "
        "attempts; at least 2: the level's agreement with itself enters the statistic).")
    max_looks: int = Field(
        3, ge=1, le=6, description="An inconclusive level is run again with its repeats "
        "doubled (the reference's with it), up to this many looks at it in all; still "
        "inconclusive then, it is reported so and the climb goes on.")
    agreement_metric: Literal["tool_f1", "arg_agreement"] = Field(
        "tool_f1", description="Agreement of two runs (analysis/consistency.py); two runs "
        "that called no tool agree.")
    min_achieved_share: float | None = Field(
        None, gt=0, le=1, description="A level is certified only when its slots were at least "
        "this busy over its measured window (achieved / configured trial concurrency, warm-up "
        "and drain left out); below it the level is not certified and, like an inconclusive "
        "one, neither passes nor stops the climb (default: the runner's bound, "
        "analysis/windows.py · MIN_ACHIEVED_SHARE).")
    min_tsq: float | None = Field(
        None, ge=0, le=1, description="Also require each level's mean TSQ at least this "
        "(an absolute quality floor, as MLPerf's accuracy rule; needs expected-tool labels).")
    start: int = Field(1, ge=1, description="First level tried; doubled until a level fails.")
    max_level: int = Field(256, ge=1, description="Highest level tried.")
    max_minutes: float | None = Field(
        None, gt=0, description="No new level starts after this many minutes of the search.")
    gpus: int | None = Field(None, ge=1, description="GPUs serving: also say N per GPU.")
    reference_level: int = Field(
        DEFAULT_REFERENCE_LEVEL, ge=1, description="The level every level's decisions are "
        "compared with (run first): the lowest batched level, so the reference carries the "
        "deployment's batch noise (a batch of one can be nearly deterministic on a GPU).")
    reference: str | None = Field(
        None, description="Instead, a sweep or job dir whose --reference-level (else lowest "
        "level) is the reference: a run on another server, precision or router.")
    control: Literal["none", "deterministic"] = Field(
        "none", description="deterministic: also run every judged level (and the reference) "
        "on a batch-invariant server and split each level's divergence into numerics and "
        "the rest (scheduling, time-outs, truncation).")
    control_base_url: str | None = Field(
        None, description="The batch-invariant server for --control deterministic when the "
        "search does not start it (--base-url searches).")

    tiers: list[Tier] = Field(
        default_factory=list, description="Named SLO tiers, each with its own capacity from "
        "the same levels; --slo bounds apply to every tier. None: one tier `slo` of the "
        "--slo bounds.")

    @field_validator("slos")
    @classmethod
    def _known(cls, v: dict[str, float]) -> dict[str, float]:
        for name in v:
            slo_column(name)
        return {**v, "lost_rate": v.get("lost_rate", DEFAULT_LOST_RATE)}

    @field_validator("tiers")
    @classmethod
    def _distinct(cls, v: list[Tier]) -> list[Tier]:
        names = [t.name for t in v]
        if len(set(names)) < len(names):
            raise ValueError(f"tier names repeat: {', '.join(names)}")
        return v

    def tier_list(self) -> list[Tier]:
        """Every tier with the bounds it is judged by (the --slo bounds, then its own)."""
        if not self.tiers:
            return [Tier(name=SINGLE_TIER, slos=dict(self.slos))]
        return [Tier(name=t.name, slos={**self.slos, **t.slos}, floors=dict(t.floors))
                for t in self.tiers]

    def slo_names(self) -> list[str]:
        """Every SLO name any tier bounds (each measured once per level)."""
        return list(dict.fromkeys(n for t in self.tier_list() for n in (*t.slos, *t.floors)))


class Check(BaseModel):
    """One bound judged at one level."""

    name: str
    value: float | None = Field(description="Measured (None: nothing to measure); for the "
                                "decision check the divergence's point estimate.")
    bound: float | None = Field(
        None, description="Decision check: the divergence's one-sided upper bound at the "
        "look's confidence (what is compared with the limit).")
    limit: float
    floor: bool = Field(False, description="An SLO floor: passes at the limit or above.")
    passed: bool
    confident: bool = Field(
        True, description="A failure shown beyond noise (for the decision check: the "
        "divergence's lower bound is at the margin or above; SLO bounds: always).")
    note: str = ""


class Interval(BaseModel):
    mean: float | None
    low: float | None
    high: float | None


class Look(BaseModel):
    """One judgement of a level's decisions, at the repeats it had then."""

    repeats: int = Field(description="Repeats per scenario at the level (most scenarios).")
    reference_repeats: int
    scenarios: int
    divergence: float | None
    upper: float | None
    lower: float | None
    confidence: float
    outcome: Literal["intact", "degraded", "inconclusive", "undecidable"]


class DecisionFigures(BaseModel):
    """A level's decisions against the reference's (analysis/decision_noise.py), last look."""

    metric: str
    reference: str = Field("", description="The reference: a level (c2), a level of another "
                           "run (<dir>/c2), or a control arm.")
    scenarios: int = Field(description="Scenarios with an estimate (a pair of repeats apart at "
                           "the level, ≥ 2 repeats at the reference).")
    own: Interval = Field(description="Agreement between this level's repeats (the floor), "
                          "95%.")
    reference_own: Interval = Field(description="The reference's agreement with itself, 95%.")
    across: Interval = Field(description="Agreement with the reference's repeats, 95%.")
    divergence: Interval = Field(description="The judged statistic (per scenario (own + "
                                 "reference_own)/2 - across), 95%.")
    drop: Interval = Field(description="reference_own - across, shown for comparison: it "
                           "also grows when only the amount of noise grows.")
    upper: float | None = Field(description="Divergence, one-sided upper bound at "
                                "`confidence`.")
    lower: float | None = Field(description="Divergence, one-sided lower bound at "
                                "`confidence`.")
    confidence: float = Field(description="Per look: 1 - alpha/(levels judgeable x looks).")


class ControlSplit(BaseModel):
    """--control deterministic: one level's divergence split by a batch-invariant arm run at
    the same level, paired per scenario."""

    total: Interval = Field(description="Divergence of the production run from its "
                            "reference, 95%.")
    scheduling: Interval = Field(
        description="Divergence of the batch-invariant run from the batch-invariant reference: "
        "what load changes without numerics (scheduling, time-outs, truncation), 95%.")
    numerics: Interval = Field(
        description="total - scheduling per scenario, 95%: what batch-dependent numerics add.")
    scenarios: int


class Design(BaseModel):
    """What the search's design can claim (bankbench/capacity/plan.py)."""

    scenarios: int
    repeats: int
    max_looks: int
    levels_judgeable: int = Field(description="The most levels the search can judge (K).")
    confidence: float = Field(description="Per look: 1 - alpha/(K x max_looks).")
    best_bound: float = Field(
        description="The divergence's upper bound when every scenario agrees: below "
        "--max-divergence, or no level can ever pass.")
    models: list[ModelRates] = Field(
        default_factory=list, description="Simulated error rates of this design over the "
        "noise-model family (bankbench/capacity/noise_models.py).")


class ModelRates(BaseModel):
    """One noise model's simulated rates at a design (bankbench/capacity/plan.py)."""

    model: str
    searches: int = Field(description="Simulated searches per condition.")
    false_stop: float | None = Field(
        None, description="Share of searches with nothing degraded that ended below the top.")
    detection_by_drop: dict[str, float] = Field(
        default_factory=dict, description="Per true drop (a share of scenarios switched to a "
        "wrong trajectory from a known level): share of searches whose capacity lies within "
        "one doubling below that level.")
    cliff_found: float | None = Field(
        None, description="Latency-cliff models: share of searches whose capacity lies "
        "within one doubling below the cliff.")
    inconclusive: float = Field(0.0, description="Share of searches with nothing degraded "
                                "that report an inconclusive level.")
    trials: float = Field(0.0, description="Trials per search with nothing degraded.")


class TierVerdict(BaseModel):
    """One tier's judgement of one level: its own SLO checks; with the step's shared checks
    (decisions, achieved concurrency, TSQ floor) they give its verdict."""

    name: str
    verdict: Verdict
    checks: list[Check]


class TierResult(BaseModel):
    """What the search found for one tier, from the same levels as every other tier."""

    name: str
    slos: dict[str, float] = Field(description="Upper bounds judged (with the --slo ones).")
    floors: dict[str, float] = Field(default_factory=dict, description="Lower bounds judged.")
    capacity: int | None = Field(description="Highest level passing this tier below the "
                                 "lowest failing it; None: none passed.")
    lowest_failing: int | None = None
    boundary_high: int | None = Field(
        None, description="Lowest level above the capacity that failed this tier beyond noise.")
    limiting: list[str] = Field(default_factory=list, description="What failed it there.")
    inconclusive: list[int] = Field(default_factory=list)
    achieved_concurrency: float | None = None
    per_accelerator: float | None = Field(
        None, description="capacity / --gpus when the accelerator count is known.")


class CapacityStep(BaseModel):
    level: int
    phase: Literal["bracket", "bisect"]
    verdict: Verdict = Field(
        "pass", description="pass: every check holds; fail: an SLO is broken or decisions "
        "shown degraded (stops the climb); inconclusive: decisions neither shown intact nor "
        "degraded after --max-looks looks, or the level did not hold its configured "
        "concurrency (achieved_share): neither certified nor stopping the climb.")
    passed: bool
    reused: bool = Field(description="The level's job was already complete (not run again).")
    checks: list[Check]
    decisions: DecisionFigures | None = None
    looks: list[Look] = Field(default_factory=list, description="Each judgement of the "
                              "decisions, as repeats were added.")
    repeats: int | None = Field(None, description="Repeats per scenario at the last look.")
    achieved_concurrency: float | None = Field(
        None, description="Trials running on average over the level's measured window.")
    control: ControlSplit | None = None
    tiers: list[TierVerdict] = Field(
        default_factory=list, description="Each tier's SLO checks and verdict at this level; "
        "`checks`/`verdict` above are the first tier's (older files: none, one tier).")
    integrity_worse: list[str] = Field(
        default_factory=list, description="Tool-call integrity classes (summary names) whose "
        "rate at this level is worse than at the search's lowest level beyond noise "
        "(analysis/integrity.py · worse_levels), as judged when the step was taken.")
    host_cpu_busy: float | None = Field(
        None, description="Share of the client host's cores busy while the level ran "
        "(contracts/host_load.py; None: not sampled). At SATURATED or more the level's "
        "latencies include waiting for CPU, and the search's lines say so.")
    host_other_cpu: float | None = Field(
        None, description="The part of host_cpu_busy neither the sweep nor its server used.")
    seconds: float = Field(description="Wall time of this step (0 when reused).")
    at: datetime


class CapacityRecord(BaseModel):
    search: CapacitySearch
    statistic: str = STATISTIC
    reference: str | None = Field(None, description="What decisions were compared with: "
                                  "c<level> of this search, or <dir>/c<level>.")
    steps: list[CapacityStep] = Field(default_factory=list)
    capacity: int | None = Field(
        None, description="Highest passing level below the lowest failing one; None: none "
        "passed (or the search has not ended).")
    achieved_concurrency: float | None = Field(
        None, description="Achieved concurrency at the capacity level.")
    lowest_failing: int | None = None
    inconclusive: list[int] = Field(
        default_factory=list, description="Levels neither certified nor failed: decisions "
        "still within noise after --max-looks looks, or achieved concurrency under the bound "
        "(each step's checks say which).")
    boundary_high: int | None = Field(
        None, description="Lowest level above the capacity that failed beyond noise: the "
        "capacity lies in [capacity, boundary_high); None: none did.")
    limiting: list[str] = Field(
        default_factory=list, description="The checks that failed at lowest_failing.")
    cliffs: list[str] = Field(
        default_factory=list, description="Figures that jump between adjacent judged levels.")
    tiers: list[TierResult] = Field(
        default_factory=list, description="Per tier, from the same levels: capacity, boundary, "
        "limiting checks, per accelerator. The fields above are the first tier's.")
    design: Design | None = None
    deterministic: bool | None = Field(
        None, description="The server ran batch-invariant kernels (a GPU profile with "
        "deterministic=true); None: not known (a server the search did not start).")
    finished: bool = False
    stopped_because: str | None = Field(
        None, description="Why the search ended: bracketed | max_level | max_minutes | "
        "inconclusive (the capacity's upper neighbour stayed inconclusive) | no passing level.")


Design.model_rebuild()
