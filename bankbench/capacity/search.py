"""Which level to try next, and what the judged levels add up to: plain functions on steps.

The search assumes the checks fail monotonically as load grows: it doubles from `start` until a
level *fails* (an SLO broken, or decisions shown degraded), then bisects between the highest
passing level below it and the lowest level above that which did not pass. A level that stays
inconclusive after its sequential repeats (bankbench/capacity/sequential.py) is not certified —
the capacity cannot rest on it — but does not stop the climb either: it bounds the bisection
from above, like a failure, and is reported. A level that passes above a failing one does not
move the answer (it is kept in capacity.json).
"""

from __future__ import annotations

import functools
import itertools
from types import SimpleNamespace

from bankbench.capacity.checks import ACHIEVED_CHECK, within_noise
from contracts.capacity import CapacitySearch, CapacityStep, Check


def _verdict(step: object) -> str:
    verdict = getattr(step, "verdict", None)
    return verdict or ("pass" if step.passed else "fail")


def bracket(steps: list) -> tuple[int | None, int | None]:
    """(highest passing level below the lowest failing one, lowest failing level)."""
    failing = min((s.level for s in steps if _verdict(s) == "fail"), default=None)
    passing = [s.level for s in steps if _verdict(s) == "pass"
               and (failing is None or s.level < failing)]
    return max(passing, default=None), failing


def _unpassed_above(steps: list, low: int) -> int | None:
    """The lowest level above `low` that did not pass (failed or inconclusive)."""
    return min((s.level for s in steps if s.level > low and _verdict(s) != "pass"),
               default=None)


def next_level(steps: list, search: CapacitySearch, ceiling: int
               ) -> tuple[int | None, str]:
    """(level to run next and its phase) or (None, why the search ends)."""
    top = min(search.max_level, ceiling)
    capacity, failing = bracket(steps)
    if not steps:
        return min(search.start, top), "bracket"
    highest = max(s.level for s in steps)
    if failing is None and highest < top and highest >= min(search.start, top):
        return min(highest * 2, top), "bracket"  # passes and inconclusive levels climb on
    low = capacity or 0
    high = _unpassed_above(steps, low)
    if high is None:
        return None, "max_level"
    if high - low <= 1:
        if capacity is None:
            return None, "no passing level"
        return None, "bracketed" if high == failing else "inconclusive"
    return (low + high) // 2, "bisect"


def tier_steps(steps: list, tier: str) -> list:
    """The steps as one tier judged them: its verdict, its SLO checks and the shared ones
    (a step without tier verdicts, from before tiers, is the one tier's as it stands)."""
    out = []
    for step in steps:
        verdicts = getattr(step, "tiers", None) or []
        mine = next((t for t in verdicts if t.name == tier), None)
        if mine is None:
            out.append(step)
            continue
        own = {c.name for c in verdicts[0].checks}
        shared = [c for c in step.checks if c.name not in own]
        out.append(step.model_copy(update={"verdict": mine.verdict,
                                           "passed": mine.verdict == "pass",
                                           "checks": [*mine.checks, *shared]}))
    return out


def next_level_tiers(steps: list, search: CapacitySearch, ceiling: int
                     ) -> tuple[int | None, str]:
    """next_level over every tier: the climb goes on until every tier has failed (the
    loosest last), each tier bisects between its own pass and fail, and a level any tier
    measured is every tier's. The lowest level any tier asks for runs next; when none asks,
    the first tier's reason ends the search."""
    tiers = search.tier_list()
    if len(tiers) == 1:
        return next_level(steps, search, ceiling)
    wanted = [next_level(tier_steps(steps, t.name), search, ceiling) for t in tiers]
    levels = [level for level, _ in wanted if level is not None]
    if not levels:
        return wanted[0]
    return min((w for w in wanted if w[0] is not None), key=lambda w: w[0])


def levels_judgeable(search: CapacitySearch, ceiling: int) -> int:
    """K for the alpha split. With T tiers at most T times one tier's K, and never more than
    the levels there are: the climb is the loosest tier's, and each tier's bisection only
    narrows when another tier's levels fall inside it (test_tiers.py brute-forces it)."""
    top = min(search.max_level, ceiling)
    one = _levels_judgeable(search.start, top)
    tiers = len(search.tier_list())
    return one if tiers == 1 else max(one, min(tiers * one, top))


@functools.lru_cache(maxsize=256)
def _levels_judgeable(start: int, top: int) -> int:
    """K: the most levels this search can judge, over every place the frontier can be (each
    level's decision test spends its share alpha/K). Inconclusive levels climb like passes
    and bound a bisection like failures, so no sequence of outcomes judges more levels than
    one of passes and failures (tests/bankbench/capacity/test_search.py checks it)."""
    search = CapacitySearch(start=start, max_level=top)
    worst = 1
    for frontier in range(0, top + 1):
        steps: list = []
        while (level := next_level(steps, search, top)[0]) is not None:
            steps.append(SimpleNamespace(level=level, verdict="pass" if level <= frontier
                                         else "fail"))
        worst = max(worst, len(steps))
    return worst


def inconclusive_levels(steps: list[CapacityStep]) -> list[int]:
    return sorted({s.level for s in steps if s.verdict == "inconclusive"})


def _sign(check: Check) -> str:
    return "<" if check.name.endswith("_divergence") else "≥" if check.floor or check.name in (
        "min_tsq", "achieved_share") else "≤"


def describe(checks: list[Check]) -> str:
    """`ttft_p90_ms 312 ≤ 500 ok, tool_f1_divergence 0.012 (bound 0.046) < 0.1 ok`: the
    decision check shows its estimate and, under its own name, the bound compared."""
    parts = []
    for c in checks:
        value = "n/a" if c.value is None else f"{c.value:.3g}"
        if c.bound is not None:
            value += f" (bound {c.bound:.3g})"
        verdict = "ok" if c.passed else "FAIL" if c.confident else "within noise"
        note = f" ({c.note})" if c.note and (not c.passed or c.value is None) else ""
        parts.append(f"{c.name} {value} {_sign(c)} {c.limit:g} {verdict}{note}")
    return ", ".join(parts)


CLIFF_RATIO = 2.0  # an SLO figure that at least doubles from one judged level to the next


def boundary(steps: list[CapacityStep], capacity: int | None) -> int | None:
    """The lowest level above the capacity that failed beyond noise (None: none did)."""
    shown = [s.level for s in steps if s.verdict == "fail"
             and (capacity is None or s.level > capacity)]
    return min(shown, default=None)


def limiting_level(steps: list[CapacityStep], capacity: int | None) -> int | None:
    """The level the limiting checks are read at: the lowest above the capacity that failed
    beyond noise; when none did, the lowest above it that did not pass (inconclusive)."""
    shown = boundary(steps, capacity)
    if shown is not None:
        return shown
    return min((s.level for s in steps if s.verdict != "pass"
                and (capacity is None or s.level > capacity)), default=None)


def limiting(steps: list[CapacityStep], level: int | None) -> list[str]:
    """The checks that kept `level` from passing, each with its note when it has one
    (`tool_f1_divergence (no tool calls to compare)`). At a failed level only the checks that
    failed beyond noise: a decision check still within noise or a level short of its
    concurrency did not fail it."""
    step = next((s for s in steps if s.level == level), None)
    if step is None:
        return []
    failed = [c for c in step.checks if not c.passed]
    if step.verdict == "fail":
        failed = [c for c in failed if not within_noise(c) and c.name != ACHIEVED_CHECK]
    return [f"{c.name} ({c.note})" if c.note else c.name for c in failed]


def cliffs(steps: list[CapacityStep], margin: float) -> list[str]:
    """Where a figure jumps between adjacent judged levels: an SLO value that grows
    CLIFF_RATIO-fold, or a decision divergence that grows by the margin or more."""
    ordered = sorted({s.level: s for s in steps}.values(), key=lambda s: s.level)
    out = []
    for a, b in itertools.pairwise(ordered):
        before = {c.name: c.value for c in a.checks}
        for c in b.checks:
            was = before.get(c.name)
            if c.value is None or was is None or c.name.endswith("_divergence") or \
                    c.name in ("min_tsq", "achieved_share"):
                continue
            if c.floor:  # a floor's figure falls: the cliff is its halving
                if c.value > 0 and was / c.value >= CLIFF_RATIO:
                    out.append(f"{c.name} /{was / c.value:.1f} from c{a.level} to "
                               f"c{b.level}")
            elif was > 0 and c.value / was >= CLIFF_RATIO:
                out.append(f"{c.name} x{c.value / was:.1f} from c{a.level} to c{b.level}")
        da = a.decisions.divergence.mean if a.decisions else None
        db = b.decisions.divergence.mean if b.decisions else None
        if da is not None and db is not None and db - da >= margin:
            out.append(f"decision divergence +{db - da:.2f} from c{a.level} to c{b.level}")
    return out
