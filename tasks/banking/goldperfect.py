"""What a gold-perfect agent scores against a label method's labels, scored by the verifier.

TSQ is agreement with labels, and labels are imperfect: the figure that says how far a run
could go under the same labels is the score of an agent that makes exactly the gold calls (each
servable gold goal's first alternative, once; nothing for a goal no tool serves), computed with
the verifier's own `score_calls` (tests/scoring.py of the task template), per scenario.

It exists only where the dataset has gold: the bundled sample (its `gold_goals.json`), or a
dataset directory holding `gold_labels.json` (either labels-file format); hub data has none,
and its tasks say "not measured" rather than borrow a figure measured on other data.
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from contracts.expected import Expected, GoldPerfect, LabelsFile
from tasks.banking.dataset import Dataset
from tasks.banking.labels.curated import read_labels_file
from tasks.banking.sample import GOLD_GOALS_PATH

SCORING = Path(__file__).resolve().parent / "template" / "tests" / "scoring.py"
GOLD_FILE = "gold_labels.json"  # what a dataset directory's gold is called


@dataclass(frozen=True)
class Gold:
    """Per scenario, the calls a gold-perfect agent makes; `where` names the gold's file."""

    where: str
    calls: dict[str, list[str]]


@cache
def scoring() -> ModuleType:
    """The verifier's scoring module, loaded from the template (the file every task ships)."""
    spec = importlib.util.spec_from_file_location("bankbench_verifier_scoring", SCORING)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def read_gold(path: Path, where: str) -> Gold:
    """A labels file (per goal: first alternative of each servable goal; per scenario: its
    list of tools) as the gold-perfect agent's calls."""
    labels = read_labels_file(path)
    if isinstance(labels, LabelsFile):
        calls = {sid: [g.tools[0] for g in entry.goals if g.tools]
                 for sid, entry in labels.scenarios.items()}
    else:
        calls = {sid: list(tools) for sid, tools in labels.items()}
    return Gold(where=where, calls=calls)


def gold_for(dataset: Dataset) -> Gold | None:
    """The dataset's own gold, or None (hub data, a directory without gold)."""
    if dataset.origin == "sample":
        return read_gold(GOLD_GOALS_PATH, f"bundled sample gold ({GOLD_GOALS_PATH.name})")
    if dataset.revision.startswith("dir:"):
        path = Path(dataset.origin) / GOLD_FILE
        if path.is_file():
            return read_gold(path, f"{GOLD_FILE} of {path.parent.name}/")
    return None


def score(expected: dict[str, Any], calls: list[str], where: str) -> GoldPerfect:
    """The verifier's numbers for an attempt that made `calls` (all valid) against
    `expected` (expected.json's `expected_tools` and `goals`)."""
    reward = scoring().score_calls([{"tool": name, "valid": True} for name in calls],
                                   expected)["reward"]
    return GoldPerfect(
        gold=where, tsq=reward["tsq"], solved=reward["solved"], goal_score=reward["goal_score"],
        goals_declined=reward["goals_declined"],
        n_goals_servable=int(reward["n_goals_servable"]),
        n_goals_no_tool=int(reward["n_goals_no_tool"]))


def for_task(gold: Gold | None, expected: Expected) -> GoldPerfect | None:
    """The gold-perfect agent's scores for one task, or None where its scenario has no gold."""
    if gold is None or expected.scenario_id not in gold.calls:
        return None
    return score(expected.model_dump(mode="json"), gold.calls[expected.scenario_id], gold.where)
