"""What a per-request definition is, and the order its definitions are computed in.

A definition computes whole columns (one row per request) in its own `unit` from the columns
it `requires`, and is shown in its metric's `display_unit`. The order is derived from the
requirements (`derivation_order`, a topological sort), never written down: a definition
that requires an unknown column, or definitions that require each other in a circle, fail
at import of the module that declares them, with the names in the message.
"""

from __future__ import annotations

import graphlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.metrics.base import Metric

NS_PER_MS = 1_000_000
# (computed unit, display unit) → factor; a unit shown as computed needs no entry.
UNIT_FACTORS = {("ns", "ms"): 1 / NS_PER_MS}


class DefinitionError(ValueError):
    """Definitions that cannot be computed: an unknown requirement, a circle, a name twice."""


@dataclass(frozen=True)
class RequestMetric:
    """One per-request definition: `compute(*requires)` over whole columns (pandas, one row
    per request) in `unit`, presented as `metric` in its `display_unit`."""

    name: str
    unit: str
    requires: tuple[str, ...]  # raw inputs or other definitions' names
    compute: Callable[..., pd.Series]
    metric: Metric

    @property
    def display_unit(self) -> str:
        """The unit the tables show (the metric's own, `Metric.unit`)."""
        return self.metric.unit

    def to_display(self, values: np.ndarray) -> np.ndarray:
        """Values in `unit` → the same in `display_unit` (a float array)."""
        values = np.asarray(values, dtype=float)
        if self.unit == self.display_unit:
            return values
        return values * UNIT_FACTORS[(self.unit, self.display_unit)]


def derivation_order(definitions: Sequence[RequestMetric],
                     raw_inputs: Iterable[str]) -> tuple[RequestMetric, ...]:
    """`definitions` in an order where each comes after every definition it requires (ties
    in the order given). A requirement named as a raw input is the raw input (a definition
    may present one under its name: server_ttft_ns). Raises `DefinitionError` naming what is
    wrong."""
    raw = set(raw_inputs)
    by_name: dict[str, RequestMetric] = {}
    for m in definitions:
        if m.name in by_name:
            raise DefinitionError(f"request metric {m.name} is defined twice")
        by_name[m.name] = m
    unknown = [f"{m.name} requires {r}" for m in definitions for r in m.requires
               if r not in raw and r not in by_name]
    if unknown:
        raise DefinitionError("request metrics require what is neither a raw input nor a "
                              f"definition: {'; '.join(unknown)}")
    sorter = graphlib.TopologicalSorter(
        {m.name: [r for r in m.requires if r in by_name and r not in raw]
         for m in definitions})
    try:
        sorter.prepare()
    except graphlib.CycleError as exc:
        raise DefinitionError("request metrics require each other in a circle: "
                              f"{' → '.join(exc.args[1])}") from None
    position = {m.name: i for i, m in enumerate(definitions)}
    order: list[RequestMetric] = []
    while sorter.is_active():
        ready = sorted(sorter.get_ready(), key=position.__getitem__)
        order += [by_name[name] for name in ready]
        sorter.done(*ready)
    return tuple(order)
