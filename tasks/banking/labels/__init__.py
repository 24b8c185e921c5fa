"""Expected-tool labelling with provenance: `sentence` (default), `intent`, `semantic`, `match`,
`keyword`, `model`, `file:PATH`.

Each method turns a scenario's goals into per-goal labels (alternative tools, or no tool) and
the tool names the set-F1 side of the verifier expects; the result carries the method, its
version and (where measured) its held-out quality, recorded in task.toml and expected.json.
"""

from __future__ import annotations

from pathlib import Path

from contracts.expected import DEFAULT_LABEL_METHOD
from tasks.banking.dataset import Dataset, Scenario
from tasks.banking.labels import curated, intent, keyword, llm, match
from tasks.banking.labels.llm import ModelOptions
from tasks.banking.labels.model import GoalChoice, LabelsError, LabelSet, ScenarioLabels

DEFAULT_METHOD = DEFAULT_LABEL_METHOD
METHODS = ("sentence", "intent", "semantic", "match", "keyword", "model", "file:PATH")

__all__ = ["DEFAULT_METHOD", "GoalChoice", "LabelSet", "LabelsError", "ModelOptions",
           "ScenarioLabels", "METHODS", "label_scenarios"]


def label_scenarios(spec: str, dataset: Dataset, scenarios: list[Scenario],
                    model_options: ModelOptions | None = None) -> LabelSet:
    """Label `scenarios` with the method `spec` names (see METHODS).

    `model` needs `model_options`: where to ask and where the reviewable labels file goes.
    """
    if spec == "intent":
        matcher = intent.make_matcher(dataset)
        labels = {s.scenario_id: intent.label(s, dataset, matcher) for s in scenarios}
        return LabelSet(method="intent", version=intent.VERSION, quality=intent.QUALITY,
                        scenarios=labels)
    if spec == "sentence":
        # Imported here: numpy and the encoder's weights load only for this method.
        from tasks.banking.labels import sentence

        matcher = sentence.make_matcher(dataset)
        labels = {s.scenario_id: sentence.label(s, dataset, matcher) for s in scenarios}
        return LabelSet(method="sentence", version=sentence.VERSION, quality=sentence.QUALITY,
                        scenarios=labels)
    if spec == "semantic":
        # Imported here: numpy and the word vectors load only for this method.
        from tasks.banking.labels import semantic

        matcher = semantic.make_matcher(dataset)
        labels = {s.scenario_id: semantic.label(s, dataset, matcher) for s in scenarios}
        return LabelSet(method="semantic", version=semantic.VERSION, quality=semantic.QUALITY,
                        scenarios=labels)
    if spec == "keyword":
        labels = {s.scenario_id: keyword.label(s, dataset) for s in scenarios}
        return LabelSet(method="keyword", version=keyword.VERSION, scenarios=labels)
    if spec == "match":
        matcher = match.Matcher(dataset.tools)
        labels = {s.scenario_id: match.label(s, dataset, matcher) for s in scenarios}
        return LabelSet(method="match", version=match.VERSION, scenarios=labels)
    if spec == "model":
        if model_options is None:
            raise LabelsError(f"--labels {spec}: needs --labels-endpoint and --labels-model")
        return llm.label_set(dataset, scenarios, model_options)
    if spec.startswith("file:") and len(spec) > len("file:"):
        path = Path(spec.removeprefix("file:")).expanduser()
        labels = curated.label_all(path, dataset, scenarios)
        document = curated.read_labels_file(path)
        meta = document if not isinstance(document, dict) else None
        return LabelSet(
            method="file", version=curated.file_version(path), source=str(path),
            produced_by=meta.produced_by if meta else None,
            quality=meta.quality if meta else None, scenarios=labels,
        )
    raise LabelsError(f"--labels {spec!r}: expected one of {', '.join(METHODS)}")
