"""Error rates of SLO tiers, by simulation through the code a tiered search runs: the same
search loop, tier-aware level order and per-tier judging (sequential.search_loop,
search.next_level_tiers, checks.judge_tiers) on runs drawn from the noise models
(sim_search.simulate_search), with two tiers on the simulated latency figure:

- `strict`: `ttft_p90_ms` at most STRICT_BOUND, which the simulated latency (simulate.py ·
  latency_p90: 100 ms x (1 + 0.02 x level), 5 % noise) crosses near level 40: a tier whose
  own frontier lies inside the search;
- `loose`: the simulation's own latency bound (SIM_SLO), never crossed below the top (except
  at a model's latency cliff).

Per tier and model, like plan.family_rates for one: with nothing degraded, the share of
searches whose capacity for that tier lies more than one doubling below where its own bound is
crossed (below the top when it never is) — a false stop; with a degradation of the decisions
from DETECT_FROM, the share whose capacity for that tier lies within one doubling below it.
"""

from __future__ import annotations

import math
import random
from concurrent.futures import ProcessPoolExecutor

from bankbench.capacity.noise_models import FAMILY, NoiseModel, by_name
from bankbench.capacity.plan import known_models
from bankbench.capacity.sim_search import found, simulate_search
from bankbench.capacity.simulate import SIM_SLO
from contracts.capacity import CapacitySearch, Tier

STRICT_BOUND = 180.0  # ms: the mean simulated p90 reaches it at level 40
TIERS = (Tier(name="strict", slos={"ttft_p90_ms": STRICT_BOUND}), Tier(name="loose"))
DETECT_FROM = 12  # as plan.DETECT_FROM: a degradation below both tiers' frontiers


def frontier(bound: float, model: NoiseModel, top: int) -> int:
    """The highest level whose mean simulated latency is within `bound` (the top when none
    above it breaks it), below the model's latency cliff."""
    level = min(top, math.floor((bound / 100.0 - 1.0) / 0.02))
    if model.cliff_level is not None and model.cliff_level <= level:
        level = model.cliff_level - 1
    return level


def _hit(capacity: int | None, edge: int, top: int, drop: float) -> bool:
    """Detection of a degradation from DETECT_FROM, or (nothing degraded) a false stop: more
    than one doubling below the tier's own frontier `edge`."""
    if drop > 0:
        return found(capacity, DETECT_FROM)
    if edge >= top:
        return (capacity or 0) < top
    return (capacity or 0) < math.ceil((edge + 1) / 2)


def _rate(task: tuple[dict, str, int, int, float, int]) -> tuple[str, float, dict[str, float]]:
    """One (model, drop) batch of tiered searches: per tier, the share of hits."""
    search_fields, name, n_scenarios, searches, drop, seed = task
    search = CapacitySearch.model_validate(search_fields)
    model = by_name(name, known_models())
    rng = random.Random(seed)
    top = search.max_level
    bounds = {t.name: t.slos.get("ttft_p90_ms", SIM_SLO["ttft_p90_ms"])
              for t in search.tier_list()}
    hits = dict.fromkeys(bounds, 0)
    for _ in range(searches):
        out = simulate_search(search, model, n_scenarios, rng, drop=drop,
                              from_level=DETECT_FROM)
        for result in out.record.tiers:
            edge = frontier(bounds[result.name], model, top)
            hits[result.name] += _hit(result.capacity, edge, top, drop)
    return name, drop, {t: h / searches for t, h in hits.items()}


def tier_rates(search: CapacitySearch, n_scenarios: int, searches: int, *,
               models: tuple[NoiseModel, ...] = FAMILY, seed: int = 11, workers: int = 1
               ) -> list[dict]:
    """Per (model, tier): false stop and detection of drops of the margin and twice it.
    `search` carries the tiers (default: TIERS)."""
    if not search.tiers:
        search = search.model_copy(update={"tiers": list(TIERS)})
    drops = (0.0, search.max_divergence, 2 * search.max_divergence)
    tasks = [(search.model_dump(), m.name, n_scenarios, searches, d, seed + 101 * i + j)
             for i, m in enumerate(models) for j, d in enumerate(drops)
             if d == 0 or all(frontier(t.slos.get("ttft_p90_ms", SIM_SLO["ttft_p90_ms"]), m,
                                       search.max_level) > DETECT_FROM
                              for t in search.tier_list())]
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            results = list(pool.map(_rate, tasks))
    else:
        results = [_rate(t) for t in tasks]
    rows: dict[tuple[str, str], dict] = {}
    for name, drop, shares in results:
        for tier, share in shares.items():
            row = rows.setdefault((name, tier), {"model": name, "tier": tier,
                                                 "searches": searches, "detection": {}})
            if drop == 0:
                row["false_stop"] = share
            else:
                row["detection"][f"{drop:g}"] = share
    return list(rows.values())
