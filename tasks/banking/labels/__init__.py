"""Expected-tool labelling with provenance: the methods of `methods.REGISTRY` (`sentence`
(default), `intent`, `semantic`, `match`, `keyword`, `model`, `file:PATH`).

Each method turns a scenario's goals into one `GoalLabel` per goal (alternative tools, or no
tool) and the tool names the set-F1 side of the verifier expects; the result carries the
method, its version and (where measured) its held-out quality, recorded in task.toml and
expected.json.
"""

from __future__ import annotations

from contracts.expected import DEFAULT_LABEL_METHOD
from tasks.banking.labels.methods import METHODS, REGISTRY, label_scenarios
from tasks.banking.labels.model import LabelsError, LabelSet, ScenarioLabels

DEFAULT_METHOD = DEFAULT_LABEL_METHOD

__all__ = ["DEFAULT_METHOD", "LabelSet", "LabelsError", "METHODS", "REGISTRY",
           "ScenarioLabels", "label_scenarios"]
