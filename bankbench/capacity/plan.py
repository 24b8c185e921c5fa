"""What a capacity search's design can claim, before (`bankbench capacity --plan`) and after a
search: the best bound any level can reach, and — simulated through the search's own loop and
judging code over the family of noise models (bankbench/capacity/noise_models.py) — how often
a search with nothing degraded stops below the top (false stop) and how often one with a
degradation of the margin's size finds it (detection), as a range over the family.
"""

from __future__ import annotations

import random
from concurrent.futures import ProcessPoolExecutor

from analysis.decision_noise import full_agreement_bound
from bankbench.capacity.noise_models import FAMILY, NoiseModel, by_name
from bankbench.capacity.sequential import look_confidence
from bankbench.capacity.sim_search import found, simulate_search
from contracts.capacity import CapacitySearch, Design, ModelRates

DETECT_FROM = 12  # degradations start here in simulated searches (not a power of two)
# The smallest scenario count at which the family's worst simulated false stop rate is at
# most 0.05 at the default design (benchmarks/capacity_noise.py; benchmarks/README.md).
VALIDATED_SCENARIOS = 50


def design(search: CapacitySearch, n_scenarios: int, k_levels: int,
           models: list[ModelRates] | None = None) -> Design:
    confidence = look_confidence(search.alpha, k_levels, search.max_looks)[0]
    return Design(scenarios=n_scenarios, repeats=search.repeats, max_looks=search.max_looks,
                  levels_judgeable=k_levels, confidence=confidence,
                  best_bound=full_agreement_bound(n_scenarios, confidence),
                  models=models or [])


def _rate(task: tuple[dict, str, int, int, float, int, int]) -> tuple[str, str, float, float,
                                                                     float]:
    """One (model, condition) batch of simulated searches: (model, condition, share that
    stopped falsely / found the change, share with an inconclusive level, trials per
    search)."""
    search_fields, name, n_scenarios, searches, drop, from_level, seed = task
    search = CapacitySearch.model_validate(search_fields)
    model = by_name(name, known_models())
    rng = random.Random(seed)
    hits = inconclusive = trials = 0
    top = search.max_level
    cliff = model.cliff_level is not None and model.cliff_level < top
    for _ in range(searches):
        out = simulate_search(search, model, n_scenarios, rng, drop=drop, from_level=from_level)
        if drop > 0:
            hits += found(out.capacity, from_level)
        elif cliff:
            hits += found(out.capacity, model.cliff_level)
        else:
            hits += (out.capacity or 0) < top
        inconclusive += bool(out.record.inconclusive)
        trials += out.trials
    condition = ("drop" if drop > 0 else "cliff" if cliff else "null")
    return name, f"{condition}{drop:g}", hits / searches, inconclusive / searches, \
        trials / searches


def known_models() -> tuple[NoiseModel, ...]:
    """The family, and the held-out models when the benchmark that holds them runs."""
    try:  # the held-out models are the benchmark's; available when it runs this
        from capacity_heldout_models import HELD_OUT  # type: ignore[import-not-found]
    except ImportError:
        return FAMILY
    return (*FAMILY, *HELD_OUT)


def family_rates(search: CapacitySearch, n_scenarios: int, searches: int, *,
                 models: tuple[NoiseModel, ...] = FAMILY, drops: tuple[float, ...] = (),
                 seed: int = 7, workers: int = 1) -> list[ModelRates]:
    """Simulated rates per model: false stop (or cliff found), and detection of each drop
    (default: the margin and twice it) from DETECT_FROM."""
    drops = drops or (search.max_divergence, 2 * search.max_divergence)
    tasks = []
    for i, model in enumerate(models):  # a cliff above the top is never met: a null model
        tasks.append((search.model_dump(), model.name, n_scenarios, searches, 0.0,
                      DETECT_FROM, seed + 101 * i))
        if model.cliff_level is None and DETECT_FROM < search.max_level:
            tasks += [(search.model_dump(), model.name, n_scenarios, searches, d, DETECT_FROM,
                       seed + 101 * i + 1 + j) for j, d in enumerate(drops)]
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            results = list(pool.map(_rate, tasks))
    else:
        results = [_rate(t) for t in tasks]
    by_model: dict[str, dict] = {}
    for name, condition, share, inconclusive, trials in results:
        entry = by_model.setdefault(name, {"model": name, "searches": searches})
        if condition.startswith("drop"):
            entry.setdefault("detection_by_drop", {})[condition[4:]] = share
        elif condition.startswith("cliff"):
            entry["cliff_found"], entry["inconclusive"] = share, inconclusive
            entry["trials"] = trials
        else:
            entry["false_stop"], entry["inconclusive"] = share, inconclusive
            entry["trials"] = trials
    return [ModelRates(**entry) for entry in by_model.values()]


def verdict(design: Design, margin: float) -> str | None:
    """What the headline must say when the design cannot support its claim (None: it can)."""
    if design.best_bound >= margin:
        return (f"not enough scenarios to certify a decision divergence under {margin:g}: "
                f"{design.scenarios} scenarios bound it at {design.best_bound:.2f} even when "
                "all agree")
    if design.scenarios < VALIDATED_SCENARIOS:
        return (f"below the validated design: {design.scenarios} scenarios (the error rates "
                f"of docs/capacity.md hold from {VALIDATED_SCENARIOS})")
    worst = max((m.false_stop for m in design.models if m.false_stop is not None),
                default=None)
    if worst is not None and worst > 0.05:
        return (f"underpowered: with nothing degraded, up to {worst:.0%} of simulated "
                f"searches stop below the top ({design.scenarios} scenarios x "
                f"{design.repeats} repeats)")
    return None


def summary_lines(design: Design, search: CapacitySearch) -> list[str]:
    lines = [f"design: {design.scenarios} scenarios x {design.repeats} repeats per level "
             f"(doubled up to {design.max_looks} looks when inconclusive), up to "
             f"{design.levels_judgeable} levels judged, each look passing at confidence "
             f"{design.confidence:.4f} (Bonferroni, alpha {search.alpha:g})",
             f"best bound (every scenario agrees): divergence < {design.best_bound:.3f} "
             f"(margin --max-divergence {search.max_divergence:g})"]
    if design.models:
        stops = [m.false_stop for m in design.models if m.false_stop is not None]
        found_ = [v for m in design.models for v in (m.detection_by_drop or {}).values()]
        cliffs = [m.cliff_found for m in design.models if m.cliff_found is not None]
        lines.append(f"over {len(design.models)} noise models ({design.models[0].searches} "
                     f"simulated searches each): false stop {min(stops):.3f}–{max(stops):.3f}"
                     + (f", detection {min(found_):.2f}–{max(found_):.2f} (drops of "
                        f"{search.max_divergence:g} and {2 * search.max_divergence:g} from "
                        f"c{DETECT_FROM})" if found_ else "")
                     + (f", latency cliff found {min(cliffs):.2f}" if cliffs else ""))
        for m in design.models:
            lines.append("  " + model_line(m, search.max_divergence))
    return lines


def model_line(m: ModelRates, margin: float) -> str:
    """`model <name>: false stop rate X, detection rate Y (drop 0.10 from level L)`."""
    if m.cliff_found is not None:
        return f"model {m.model}: cliff found rate {m.cliff_found:.3f}"
    text = f"model {m.model}: false stop rate {m.false_stop:.3f}"
    detection = m.detection_by_drop or {}
    key = f"{margin:g}"
    if key in detection:
        text += f", detection rate {detection[key]:.3f} (drop {margin:.2f} from level " \
                f"{DETECT_FROM})"
    return text
