"""Error rates of the capacity search's decision check, by simulation through the code the
search runs: `next_level`/`bracket` pick levels, `analysis.decision_noise.scenario_agreements`
and `bankbench.capacity.search.judge` judge each, on synthetic decisions from the noise model
of bankbench/capacity/plan.py (a known floor, and a known drop above a known level).

    .venv/bin/python benchmarks/capacity_noise.py                     # recommended design
    .venv/bin/python benchmarks/capacity_noise.py --scenarios 50 --repeats 2 --searches 300

Prints, each from --searches simulated searches over levels 1..--max-level:

    false stop rate 0.0xx (floor 0.95, no degradation, levels 1..64)
    detection rate 0.xx (10-point drop from level 16)

A false stop is a search that ends below --max-level although no level changed; a detection
is a search whose capacity is below the level the drop starts at. Also the mean levels run
and the wall time (perf_counter_ns).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from analysis.consistency import tool_f1  # noqa: E402
from analysis.decision_noise import pair_mean, per_level_confidence, scenario_agreements  # noqa: E402
from bankbench.capacity.plan import NoiseModel, draw_level, draw_scenarios  # noqa: E402
from bankbench.capacity.search import bracket, judge, levels_judgeable, next_level  # noqa: E402
from contracts.capacity import CapacitySearch, CapacityStep  # noqa: E402

CEILING = 10**6  # no task-count cap in the simulation


def simulate(search: CapacitySearch, rng: random.Random, n_scenarios: int, divergence: float,
             extra: float, from_level: int, confidence: float) -> tuple[int | None, int]:
    """One search: (capacity, levels run)."""
    scenarios = draw_scenarios(rng, n_scenarios, divergence)
    reference: dict | None = None
    baselines: dict[str, float] = {}
    steps: list[CapacityStep] = []
    while (found := next_level(steps, search, CEILING))[0] is not None:
        level, phase = found
        calls = draw_level(rng, scenarios, search.repeats,
                           extra if level >= from_level else 0.0)
        is_reference = reference is None
        if is_reference:
            reference = calls
            baselines = {sid: pair_mean(runs, None, tool_f1) for sid, runs in calls.items()}
        agreements = scenario_agreements(calls, reference, tool_f1, baselines)
        checks, figures = judge(search, {"lost_rate": 0.0}, agreements, is_reference,
                                confidence)
        steps.append(CapacityStep.model_construct(
            level=level, phase=phase, passed=all(c.passed for c in checks), reused=False,
            checks=checks, decisions=figures, seconds=0.0, at=None))
    return bracket(steps)[0], len(steps)


def run(search: CapacitySearch, searches: int, n_scenarios: int, floor: float, drop: float,
        from_level: int, seed: int) -> tuple[float, float]:
    """(share of searches whose capacity is below from_level, mean levels run)."""
    model = NoiseModel(floor)
    p, q = model.divergence, model.extra_for_drop(drop)
    confidence = per_level_confidence(search.alpha, levels_judgeable(search, CEILING))
    rng = random.Random(seed)
    below = levels = 0
    for _ in range(searches):
        capacity, n = simulate(search, rng, n_scenarios, p, q, from_level, confidence)
        below += capacity is None or capacity < from_level
        levels += n
    return below / searches, levels / searches


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--searches", type=int, default=1000)
    ap.add_argument("--scenarios", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--floor", type=float, default=0.95)
    ap.add_argument("--drop", type=float, default=0.10, help="degradation (detection run)")
    ap.add_argument("--from-level", type=int, default=16, help="degraded from this level")
    ap.add_argument("--max-level", type=int, default=64)
    ap.add_argument("--max-drop", type=float, default=None, help="margin (default: search's)")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()

    options = {"repeats": args.repeats, "max_level": args.max_level}
    if args.max_drop is not None:
        options["max_drop"] = args.max_drop
    search = CapacitySearch(**options)
    k = levels_judgeable(search, CEILING)
    print(f"design: {args.scenarios} scenarios x {args.repeats} repeats, --max-drop "
          f"{search.max_drop:g}, alpha {search.alpha:g} over K={k} judgeable levels "
          f"(per level {per_level_confidence(search.alpha, k):.4f}); noise model "
          f"bankbench/capacity/plan.py; {args.searches} searches each", flush=True)
    t0 = time.perf_counter_ns()
    false_stop, levels_null = run(search, args.searches, args.scenarios, args.floor, 0.0,
                                  args.max_level, args.seed)
    detection, levels_drop = run(search, args.searches, args.scenarios, args.floor,
                                 args.drop, args.from_level, args.seed + 1)
    wall = (time.perf_counter_ns() - t0) / 1e9
    print(f"false stop rate {false_stop:.3f} (floor {args.floor:g}, no degradation, "
          f"levels 1..{args.max_level})")
    print(f"detection rate {detection:.2f} ({args.drop * 100:g}-point drop from level "
          f"{args.from_level})")
    print(f"levels run per search: {levels_null:.1f} (no degradation), {levels_drop:.1f} "
          f"(drop); wall {wall:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
