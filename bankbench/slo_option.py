"""`--slo`: one format and one vocabulary for `bankbench report` and `bankbench capacity`.

Format: `--slo NAME=NUMBER`, repeatable; each value may also be a comma list
(`--slo ttft_ms=500,e2e_ms=30000`); repeated flags accumulate, and a name given twice with two
values is an error rather than a silent choice.

Names: one metric vocabulary (contracts/capacity.py · SLO_METRICS: ttft, itl, tpot, e2e, ttfc,
server_ttft and AIPerf's names), always with the unit `_ms`.
- `report` bounds each request (goodput): `ttft_ms`, `itl_ms` (= `tpot_ms`: the request's mean
  time per output token), `e2e_ms` (`e2e_s` is still read).
- `capacity` bounds a statistic of a level: `<metric>_<stat>_ms` (`ttft_p90_ms`), or a rate
  (`error_rate`, `lost_rate`).
- `capacity --tier NAME=SPEC`: SPEC is the same comma list with an operator per bound
  (`<=` an upper bound, `>=` a floor, `=` an upper bound as in --slo):
  `interactive=ttfc_p90_ms<=2000,output_tps_per_user_p10>=40`.
"""

from __future__ import annotations

import difflib
import re
from typing import TYPE_CHECKING

from contracts.capacity import (
    SLO_METRICS,
    SLO_RATE_METRICS,
    SLO_RATES,
    SLO_STATS,
    Tier,
    slo_column,
)

if TYPE_CHECKING:  # the goodput model pulls in pandas: the CLI's parser must not pay for it
    from analysis.metrics.goodput import SLO

# report: per-request name -> (SLO field, factor from the given unit to the field's)
_REQUEST = {"ttft_ms": ("ttft_ms", 1.0), "time_to_first_token_ms": ("ttft_ms", 1.0),
            "itl_ms": ("itl_ms", 1.0), "tpot_ms": ("itl_ms", 1.0),
            "inter_token_latency_ms": ("itl_ms", 1.0),
            "e2e_ms": ("e2e_s", 1e-3), "request_latency_ms": ("e2e_s", 1e-3),
            "e2e_s": ("e2e_s", 1.0)}
_LEVEL_EXAMPLES = ([f"{m}_{s}_ms" for m in SLO_METRICS for s in SLO_STATS] + list(SLO_RATES)
                   + [f"{m}_{s}" for m in SLO_RATE_METRICS for s in SLO_STATS])
_BOUND = re.compile(r"^\s*([A-Za-z0-9_]+)\s*(<=|>=|≤|≥|=)\s*(.+?)\s*$")

# Tiers in AgentPerf's shape (a first-token ceiling with a per-agent output-rate floor); the
# numbers are this project's, for agents that act on tool calls: time to first tool call at
# p90, the slowest decile's decode speed. docs/capacity.md (SLO tiers) explains them.
DEFAULT_TIERS = (
    "interactive=ttfc_p90_ms<=2000,output_tps_per_user_p10>=40",
    "standard=ttfc_p90_ms<=5000,output_tps_per_user_p10>=20",
    "batch=ttfc_p90_ms<=20000,output_tps_per_user_p10>=5",
)


def _bound(where: str, number: str) -> float:
    """A bound's number: ValueError naming `where` unless it is a number ≥ 0."""
    try:
        bound = float(number)
    except ValueError:
        raise ValueError(f"{where}: {number.strip()!r} is not a number") from None
    if bound < 0:
        raise ValueError(f"{where}: a bound cannot be negative")
    return bound


def items(values: list[str] | None) -> list[tuple[str, float]]:
    """Every NAME=NUMBER of the repeated, comma-listed --slo values, in order; ValueError with
    one line naming the bad item."""
    pairs: list[tuple[str, float]] = []
    seen: dict[str, float] = {}
    for value in values or []:
        for part in filter(None, (p.strip() for p in value.split(","))):
            name, sep, number = part.partition("=")
            name = name.strip()
            if not sep or not name:
                raise ValueError(f"--slo {part!r}: expected NAME=NUMBER, e.g. ttft_ms=500")
            bound = _bound(f"--slo {part!r}", number)
            if name in seen and seen[name] != bound:
                raise ValueError(f"--slo {name} given twice ({seen[name]:g} and {bound:g})")
            if name not in seen:
                seen[name] = bound
                pairs.append((name, bound))
    return pairs


def _did_you_mean(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    return f" (did you mean {close[0]}?)" if close else ""


def request_slo(values: list[str] | None) -> SLO | None:
    """`bankbench report --slo`: per-request goodput bounds; None when none was given."""
    bounds: dict[str, float] = {}
    for name, bound in items(values):
        if name not in _REQUEST:
            hint = ""
            try:
                slo_column(name)
                hint = (" (a level statistic bounds a capacity search; the report's goodput "
                        "bounds each request: ttft_ms, itl_ms, e2e_ms)")
            except ValueError:
                hint = _did_you_mean(name, list(_REQUEST))
            raise ValueError(f"--slo {name!r} is not one of "
                             f"{', '.join(n for n in _REQUEST if n != 'e2e_s')}{hint}")
        if bound <= 0:
            raise ValueError(f"--slo {name}: the bound must be > 0")
        field, factor = _REQUEST[name]
        bounds[field] = bound * factor
    from analysis.metrics.goodput import SLO

    return SLO(**bounds) if bounds else None


def level_slos(values: list[str] | None) -> dict[str, float]:
    """`bankbench capacity --slo`: bounds on level statistics and rates, by name."""
    out: dict[str, float] = {}
    for name, bound in items(values):
        try:
            slo_column(name)
        except ValueError as exc:
            if name in _REQUEST:
                stem = name.removesuffix("_ms").removesuffix("_s")
                raise ValueError(f"--slo {name!r}: a capacity search bounds a statistic of "
                                 f"each level, e.g. {stem}_p90_ms") from None
            raise ValueError(str(exc) + _did_you_mean(name, _LEVEL_EXAMPLES)) from None
        out[name] = bound
    return out


def _level_name(name: str) -> None:
    try:
        slo_column(name)
    except ValueError as exc:
        raise ValueError(str(exc) + _did_you_mean(name, _LEVEL_EXAMPLES)) from None


def tier(text: str) -> Tier:
    """One `--tier NAME=SPEC`: ValueError with one line naming the bad part."""
    name, sep, spec = text.partition("=")
    name = name.strip()
    if not sep or not name or not spec.strip():
        raise ValueError(f"--tier {text!r}: expected NAME=SPEC, e.g. "
                         f"{DEFAULT_TIERS[0]}")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name):
        raise ValueError(f"--tier {text!r}: the name {name!r} may hold letters, digits, "
                         "'_', '.', '-'")
    slos: dict[str, float] = {}
    floors: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        match = _BOUND.match(part)
        if not match:
            raise ValueError(f"--tier {name}: {part!r}: expected NAME<=NUMBER, NAME>=NUMBER "
                             "or NAME=NUMBER")
        bound_name, op, number = match.groups()
        bound = _bound(f"--tier {name}: {part!r}", number)
        try:
            _level_name(bound_name)
        except ValueError as exc:
            raise ValueError(f"--tier {name}: " + str(exc).removeprefix("--slo ")) from None
        into = floors if op in (">=", "≥") else slos
        if bound_name in slos or bound_name in floors:
            raise ValueError(f"--tier {name}: {bound_name} bounded twice")
        into[bound_name] = bound
    if not slos and not floors:
        raise ValueError(f"--tier {name}: no bound given")
    return Tier(name=name, slos=slos, floors=floors)


def default_tiers() -> list[Tier]:
    return [tier(text) for text in DEFAULT_TIERS]
