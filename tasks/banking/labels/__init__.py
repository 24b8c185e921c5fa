"""Expected-tool labelling with provenance: `keyword`, `match` or `file:PATH`.

Each method turns a scenario's goals into the tool names the verifier expects; the result
carries the method and its version, recorded in task.toml and tests/expected.json.
"""

from __future__ import annotations

from pathlib import Path

from tasks.banking.dataset import Dataset, Scenario
from tasks.banking.labels import curated, keyword, match
from tasks.banking.labels.model import LabelsError, LabelSet, ScenarioLabels

METHODS = ("keyword", "match", "file:PATH")

__all__ = ["LabelSet", "LabelsError", "ScenarioLabels", "METHODS", "label_scenarios"]


def label_scenarios(spec: str, dataset: Dataset, scenarios: list[Scenario]) -> LabelSet:
    """Label `scenarios` with the method `spec` names ('keyword', 'match' or 'file:PATH')."""
    if spec == "keyword":
        labels = {s.scenario_id: keyword.label(s, dataset) for s in scenarios}
        return LabelSet(method="keyword", version=keyword.VERSION, scenarios=labels)
    if spec == "match":
        matcher = match.Matcher(dataset.tools)
        labels = {s.scenario_id: match.label(s, dataset, matcher) for s in scenarios}
        return LabelSet(method="match", version=match.VERSION, scenarios=labels)
    if spec.startswith("file:") and len(spec) > len("file:"):
        path = Path(spec.removeprefix("file:")).expanduser()
        labels = curated.label_all(path, dataset, scenarios)
        return LabelSet(
            method="file", version=curated.file_version(path), source=str(path), scenarios=labels
        )
    raise LabelsError(f"--labels {spec!r}: expected one of {', '.join(METHODS)}")
