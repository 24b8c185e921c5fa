"""SLO tiers from one search: `--tier NAME=SPEC` parsed (ceilings and floors), every level
measured once and judged per tier with one shared decision check, the climb going on until
every tier failed, a bisection per tier that reuses the levels other tiers measured, K for the
alpha split covering the tiers, and the per-tier table and capacity.json fields (the top-level
ones staying the first tier's)."""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime

import pytest

from analysis.decision_noise import ScenarioDivergence
from bankbench.capacity.checks import level_step, slo_checks
from bankbench.capacity.output import headline, level_table, tier_table
from bankbench.capacity.search import describe, levels_judgeable, next_level_tiers
from bankbench.capacity.sequential import search_loop
from bankbench.slo_option import DEFAULT_TIERS, default_tiers, tier
from contracts.capacity import (
    CapacityRecord,
    CapacitySearch,
    CapacityStep,
    Check,
    Tier,
    TierVerdict,
    slo_column,
)


def test_a_tier_spec_has_an_operator_per_bound():
    t = tier("interactive=ttfc_p90_ms<=2000,output_tps_per_user_p10>=20")
    assert (t.name, t.slos, t.floors) == ("interactive", {"ttfc_p90_ms": 2000.0},
                                          {"output_tps_per_user_p10": 20.0})
    assert tier("loose=ttft_p90_ms=900").slos == {"ttft_p90_ms": 900.0}  # `=` is --slo's ≤
    assert tier("x=error_rate ≤ 0.1, output_token_throughput_per_user_p50 ≥ 5").floors == {
        "output_token_throughput_per_user_p50": 5.0}
    assert slo_column("output_tps_per_user_p10") == "output_tps_per_user_p10"
    for bad, says in (("nobounds", "expected NAME=SPEC"), ("a=", "expected NAME=SPEC"),
                      ("a=ttft_p90<=3", "did you mean ttft_p90_ms"),
                      ("a=ttfc_p90_ms<=x", "'x' is not a number"),
                      ("a=ttfc_p90_ms<2", "expected NAME<=NUMBER"),
                      ("a=ttfc_p90_ms<=2,ttfc_p90_ms>=1", "bounded twice"),
                      ("a b=ttfc_p90_ms<=1", "may hold letters")):
        with pytest.raises(ValueError, match=says) as caught:
            tier(bad)
        assert "\n" not in str(caught.value)
    with pytest.raises(ValueError, match="tier names repeat"):
        CapacitySearch(tiers=[tier("a=ttfc_p90_ms<=1"), tier("a=ttfc_p90_ms<=2")])


def test_the_default_tiers_are_a_first_token_ceiling_with_an_output_rate_floor():
    tiers = default_tiers()
    assert len(tiers) == len(DEFAULT_TIERS) >= 2
    for t in tiers:
        assert [slo_column(n).split("_")[0] for n in t.slos] == ["ttfc"]
        assert list(t.floors) == ["output_tps_per_user_p10"]
    # each tier looser than the one before it in both bounds
    for a, b in itertools.pairwise(tiers):
        assert b.slos["ttfc_p90_ms"] > a.slos["ttfc_p90_ms"]
        assert b.floors["output_tps_per_user_p10"] < a.floors["output_tps_per_user_p10"]


def test_a_floor_passes_at_its_limit_and_above():
    checks = slo_checks({"ttfc_p90_ms": 2000}, {"ttfc_p90_ms": 2000.0,
                                                "output_tps_per_user_p10": 19.0},
                        {"output_tps_per_user_p10": 20})
    assert [(c.name, c.floor, c.passed) for c in checks] == [
        ("ttfc_p90_ms", False, True), ("output_tps_per_user_p10", True, False)]
    assert "output_tps_per_user_p10 19 ≥ 20 FAIL" in describe(checks)
    unmeasured = slo_checks({}, {}, {"output_tps_per_user_p10": 20})[0]
    assert not unmeasured.passed and unmeasured.note == "nothing measured"


def test_the_output_rate_floor_reads_the_slowest_decile_of_requests_that_succeeded():
    import numpy as np
    import pandas as pd

    from bankbench.capacity.checks import slo_value

    requests = pd.DataFrame({"ok": [True] * 10 + [False],
                             "output_tps_per_user": [*range(10, 110, 10), 1.0]})
    value = slo_value("output_tps_per_user_p10", pd.Series(dtype=float), requests, 0.0)
    assert value == pytest.approx(np.percentile(range(10, 110, 10), 10))  # the failed one out


# --- the search over synthetic levels ----------------------------------------------------

AGREEING = [ScenarioDivergence(f"s{i}", 2, 2, 1.0, 1.0, 1.0) for i in range(80)]
DEGRADED = [ScenarioDivergence(f"s{i}", 2, 2, 1.0, 1.0, 0.0 if i < 40 else 1.0)
            for i in range(80)]


class Levels:
    """A LevelSource whose TTFT is 10 ms x level and output rate 200 / level tokens/s; the
    decisions agree with the reference below `degraded_from`, half switched from it."""

    def __init__(self, search: CapacitySearch, degraded_from: int = 10**6) -> None:
        self.search, self.degraded_from = search, degraded_from
        self.ensured: list[int] = []
        self.judged: list[int] = []

    def ensure(self, level: int, repeats: int) -> None:
        self.ensured.append(level)

    def repeats(self, level: int) -> int:
        return 2

    def judge(self, level, phase, confidence) -> CapacityStep:
        self.judged.append(level)
        values = {"ttft_p90_ms": 10.0 * level, "output_tps_per_user_p10": 200.0 / level,
                  "lost_rate": 0.0, "error_rate": 0.0}
        return level_step(self.search, level, phase, confidence, slo_values=values,
                          scenarios=DEGRADED if level >= self.degraded_from else AGREEING,
                          is_reference=level == self.search.reference_level,
                          reference="c2", repeats=2, reference_repeats=2)


def _search(*tiers: str, **options) -> CapacitySearch:
    return CapacitySearch(tiers=[tier(t) for t in tiers], max_level=64, **options)


def _run(search: CapacitySearch, **source) -> tuple[CapacityRecord, Levels]:
    levels = Levels(search, **source)
    record = search_loop(search, 10**6, levels, CapacityRecord(search=search),
                         reference_level=search.reference_level)
    return record, levels


def test_two_tiers_from_one_climb_each_level_measured_once():
    # strict: TTFT ≤ 55 ms -> capacity 5; loose: ≥ 10 tokens/s -> capacity 20
    search = _search("strict=ttft_p90_ms<=55", "loose=output_tps_per_user_p10>=10")
    record, levels = _run(search)
    judged = [s.level for s in record.steps]
    assert len(judged) == len(set(judged)) == len(levels.judged)  # one look each
    assert [t.name for t in record.tiers] == ["strict", "loose"]
    assert [(t.capacity, t.boundary_high) for t in record.tiers] == [(5, 6), (20, 21)]
    assert record.tiers[0].limiting == ["ttft_p90_ms"]
    assert record.tiers[1].limiting == ["output_tps_per_user_p10"]
    # the climb went on past the strict tier's failure (c8) until the loose tier failed (c32)
    climb = [s.level for s in record.steps if s.phase == "bracket"]
    assert climb == [1, 2, 4, 8, 16, 32]
    # the top-level fields are the first tier's, as readers from before tiers read them
    assert (record.capacity, record.boundary_high, record.limiting) == (5, 6, ["ttft_p90_ms"])
    # every step carries both tiers' verdicts beside one shared decision check
    for step in record.steps:
        assert [t.name for t in step.tiers] == ["strict", "loose"]
        assert sum(c.name.endswith("_divergence") for c in step.checks) == 1
        assert all(not c.name.endswith("_divergence") for t in step.tiers for c in t.checks)
    c8 = next(s for s in record.steps if s.level == 8)
    assert [t.verdict for t in c8.tiers] == ["fail", "pass"] and c8.verdict == "fail"
    # the same search with either tier alone reaches the same capacity
    for alone, capacity in (("strict=ttft_p90_ms<=55", 5),
                            ("loose=output_tps_per_user_p10>=10", 20)):
        assert _run(_search(alone))[0].capacity == capacity


def test_a_degradation_below_both_frontiers_limits_both_tiers():
    search = _search("strict=ttft_p90_ms<=55", "loose=output_tps_per_user_p10>=10")
    record, _ = _run(search, degraded_from=4)
    assert [t.capacity for t in record.tiers] == [3, 3]
    assert all(t.limiting == ["tool_f1_divergence"] for t in record.tiers)
    assert max(s.level for s in record.steps) == 4  # no tier left to climb for
    table = tier_table(record)
    assert list(table["tier"]) == ["strict", "loose", "decisions"]
    assert table.iloc[2]["capacity"] == 3
    assert table.iloc[2]["limited by"] == "decisions shown degraded at c4"


def test_one_slo_alone_is_one_tier_and_says_nothing_of_tiers():
    search = CapacitySearch(slos={"ttft_p90_ms": 55}, max_level=64)
    record, _ = _run(search)
    assert [t.name for t in record.tiers] == ["slo"] and record.capacity == 5
    line = headline(record)
    assert line.startswith("5 concurrent agents") and "tier" not in line
    assert "within SLO ttft_p90_ms≤55, lost_rate≤0.05" in line
    assert levels_judgeable(search, 10**6) == levels_judgeable(
        CapacitySearch(max_level=64), 10**6)


def test_the_table_and_capacity_json_hold_every_tier():
    search = _search("strict=ttft_p90_ms<=55", "loose=output_tps_per_user_p10>=10",
                     slos={"error_rate": 0.5}, gpus=4)
    record, _ = _run(search)
    table = tier_table(record)
    assert list(table.columns) == ["tier", "bounds", "capacity", "boundary", "limited by",
                                   "per accelerator"]
    rows = table.set_index("tier")
    assert rows.loc["strict", "bounds"] == "error_rate≤0.5, lost_rate≤0.05, ttft_p90_ms≤55"
    assert rows.loc["loose", "bounds"] == ("error_rate≤0.5, lost_rate≤0.05, "
                                           "output_tps_per_user_p10≥10")
    assert (rows.loc["strict", "capacity"], rows.loc["strict", "boundary"]) == (5, "[5, c6)")
    assert rows.loc["loose", "limited by"] == "output_tps_per_user_p10 at c21"
    assert rows.loc["loose", "per accelerator"] == "5"
    assert rows.loc["decisions", "limited by"].startswith("not shown degraded up to c32")
    assert headline(record).startswith("tier strict: 5 concurrent agents")
    levels = level_table(record).set_index("level")
    assert "output_tps_per_user_p10" in levels.columns  # the loose tier's figure
    assert (levels.loc[8, "verdict strict"], levels.loc[8, "verdict loose"]) == ("fail", "pass")
    stored = json.loads(record.model_dump_json())
    assert [(t["name"], t["capacity"], t["boundary_high"], t["per_accelerator"])
            for t in stored["tiers"]] == [("strict", 5, 6, 1.25), ("loose", 20, 21, 5.0)]
    assert stored["capacity"] == 5 and stored["limiting"] == ["ttft_p90_ms"]
    back = CapacityRecord.model_validate(stored)
    assert back.tiers == record.tiers and back.search.tier_list() == search.tier_list()


def test_a_record_from_before_tiers_reads_as_one_tier():
    step = CapacityStep(level=1, phase="bracket", verdict="pass", passed=True, reused=False,
                        checks=[Check(name="ttft_p90_ms", value=1.0, limit=5.0, passed=True)],
                        seconds=0, at=datetime.now(UTC))
    old = json.loads(CapacityRecord(search=CapacitySearch(slos={"ttft_p90_ms": 5}),
                                    steps=[step], capacity=1).model_dump_json())
    for key in ("tiers",):
        old.pop(key)
        old["search"].pop(key)
        old["steps"][0].pop(key)
    record = CapacityRecord.model_validate(old)
    assert record.search.tier_list() == [Tier(name="slo", slos={"ttft_p90_ms": 5.0,
                                                                "lost_rate": 0.05})]
    assert next_level_tiers(record.steps, record.search, 100) == (2, "bracket")


def _tiered_step(level: int, verdicts: list[str]) -> CapacityStep:
    return CapacityStep(level=level, phase="bracket", verdict=verdicts[0],
                        passed=verdicts[0] == "pass", reused=False, checks=[],
                        tiers=[TierVerdict(name=f"t{i}", verdict=v, checks=[])
                               for i, v in enumerate(verdicts)],
                        seconds=0, at=datetime.now(UTC))


def test_k_covers_every_pair_of_tier_frontiers():
    """Every placement of two tiers' frontiers (and a level neither passes nor fails at,
    inconclusive), the levels the tier-aware search judges never exceed K."""
    for top in (8, 13, 17):
        search = CapacitySearch(max_level=top, tiers=[Tier(name="t0", slos={}),
                                                      Tier(name="t1", slos={})])
        k = levels_judgeable(search, top)
        worst = 0
        for f0, f1 in itertools.product(range(top + 1), repeat=2):
            for unsure in (None, f0 + 1):
                steps: list[CapacityStep] = []
                while (level := next_level_tiers(steps, search, top)[0]) is not None:
                    assert level not in {s.level for s in steps}
                    steps.append(_tiered_step(level, [
                        "inconclusive" if level == unsure else
                        "pass" if level <= f else "fail" for f in (f0, f1)]))
                worst = max(worst, len(steps))
        assert worst <= k, (top, worst, k)


def test_the_simulated_tiers_each_find_their_own_frontier():
    """The tier simulation (benchmarks/capacity_noise.py --tiers) runs the product's loop: with
    nothing degraded the loose tier passes to the top and the strict one stops near where the
    simulated latency crosses its bound; a false stop and a detection are counted per tier."""
    import random

    from bankbench.capacity.noise_models import by_name
    from bankbench.capacity.sim_search import simulate_search
    from bankbench.capacity.sim_tiers import TIERS, _hit, frontier

    model = by_name("a")
    assert frontier(180.0, model, 64) == 40 and frontier(300.0, model, 64) == 64
    assert frontier(180.0, by_name("g"), 64) == 23  # its latency cliff at 24 comes first
    search = CapacitySearch(max_level=64, tiers=list(TIERS))
    out = simulate_search(search, model, 60, random.Random(3))
    capacity = {t.name: t.capacity for t in out.record.tiers}
    assert capacity["loose"] == 64 and 30 <= capacity["strict"] <= 50, capacity
    assert not _hit(capacity["strict"], 40, 64, 0.0) and _hit(19, 40, 64, 0.0)
    assert _hit(8, 40, 64, 0.1) and not _hit(12, 40, 64, 0.1)
