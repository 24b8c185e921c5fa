"""The labelling methods by name: what `--labels NAME` runs.

Each `Method` names itself, says in one line what it does (the CLI's `--help` lists these),
whether it takes an argument (`file:PATH`), whether it can take minutes (the builder announces
it), and how it labels. A matcher method is a module with `VERSION` (and `QUALITY` where
measured), `make_matcher(dataset)` and `label(scenario, dataset, matcher)`; it is imported only
when used, so the encoder's weights load only for the methods that need them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING

from tasks.banking.labels.model import LabelsError, LabelSet

if TYPE_CHECKING:
    from tasks.banking.dataset import Dataset, Scenario
    from tasks.banking.labels.llm import ModelOptions

# (dataset, scenarios, argument after "name:", model options) → labels
Labeller = Callable[["Dataset", "list[Scenario]", str, "ModelOptions | None"], LabelSet]


@dataclass(frozen=True)
class Method:
    name: str  # as task.toml and expected.json record it (contracts.expected.LabelMethod)
    summary: str  # one line for --help
    run: Labeller
    slow: bool = False  # loads an encoder or asks a model: the builder says it is working
    argument: str = ""  # "PATH": written `name:PATH`

    @property
    def spec(self) -> str:
        return f"{self.name}:{self.argument}" if self.argument else self.name


def _matcher(name: str) -> Labeller:
    """A matcher method, run over every scenario with one matcher."""

    def run(dataset: Dataset, scenarios: list[Scenario], _argument: str,
            _options: ModelOptions | None) -> LabelSet:
        module = import_module(f"tasks.banking.labels.{name}")
        matcher = module.make_matcher(dataset)
        return LabelSet(method=name, version=module.VERSION,
                        quality=getattr(module, "QUALITY", None),
                        scenarios={s.scenario_id: module.label(s, dataset, matcher)
                                   for s in scenarios})

    return run


def _model(dataset: Dataset, scenarios: list[Scenario], _argument: str,
           options: ModelOptions | None) -> LabelSet:
    if options is None:
        raise LabelsError("--labels model: needs --labels-endpoint and --labels-model")
    from tasks.banking.labels import llm

    return llm.label_set(dataset, scenarios, options)


def _file(dataset: Dataset, scenarios: list[Scenario], argument: str,
          _options: ModelOptions | None) -> LabelSet:
    from tasks.banking.labels import curated

    path = Path(argument).expanduser()
    labels = curated.label_all(path, dataset, scenarios)
    document = curated.read_labels_file(path)
    meta = document if not isinstance(document, dict) else None
    return LabelSet(method="file", version=curated.file_version(path), source=str(path),
                    produced_by=meta.produced_by if meta else None,
                    quality=meta.quality if meta else None, scenarios=labels)


REGISTRY: dict[str, Method] = {m.name: m for m in (
    Method("sentence", "default: the tool whose schema is closest in meaning to the goal by a "
           "general-English sentence encoder, schema words as tie-breaker; 'no tool' for an "
           "explanation or when none is close", _matcher("sentence"), slow=True),
    Method("intent", "goal words vs tool schema words; 'no tool' below a threshold",
           _matcher("intent"), slow=True),
    Method("semantic", "intent with each tool's name words widened by general-English word "
           "vectors; needs the 'labels' extra", _matcher("semantic"), slow=True),
    Method("match", "an earlier default", _matcher("match")),
    Method("keyword", "the reference integration's keyword heuristic, noisy, for "
           "comparability", _matcher("keyword")),
    Method("model", "ask a model: see --labels-endpoint; writes a labels file to review",
           _model, slow=True),
    Method("file", "curated JSON, per goal or the reference's per scenario "
           "{\"banking-007\": [\"tool\", ...]}; see docs/labels.md", _file, argument="PATH"),
)}
METHODS = tuple(m.spec for m in REGISTRY.values())


def method_of(spec: str) -> tuple[Method, str]:
    """The method `spec` names and its argument; LabelsError listing the methods if none."""
    name, sep, argument = spec.partition(":")
    method = REGISTRY.get(name)
    if method is None or bool(sep) != bool(method.argument) or (sep and not argument):
        raise LabelsError(f"--labels {spec!r}: expected one of {', '.join(METHODS)}")
    return method, argument


def help_text() -> str:
    """The methods for --help, in registry order."""
    return "; ".join(f"'{m.spec}' ({m.summary})" for m in REGISTRY.values())


def label_scenarios(spec: str, dataset: Dataset, scenarios: list[Scenario],
                    model_options: ModelOptions | None = None) -> LabelSet:
    """Label `scenarios` with the method `spec` names (see METHODS).

    `model` needs `model_options`: where to ask and where the reviewable labels file goes.
    """
    method, argument = method_of(spec)
    return method.run(dataset, scenarios, argument, model_options)
