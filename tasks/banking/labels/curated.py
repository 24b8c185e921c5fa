"""`--labels file:PATH`: curated expected tools, per scenario or per goal.

Two formats (both in contracts/expected.py): the reference's per-scenario map
`{"banking-007": ["tool", …]}` (a multiset in goal order, no goal mapping), and the per-goal
`LabelsFile` (`{"format": "bankbench-labels/2", "scenarios": {id: {"goals": [...]}}}`), where
each goal lists alternative tools or says no tool serves it. Every scenario being built must
have an entry, every tool must exist in the domain's tool list, every id must name a row of
the split, and a per-goal entry must have one label per goal (and, where it quotes the goal,
the same text); anything else stops the build with the culprits named.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from pydantic import ValidationError

from contracts.expected import LabelsFile
from tasks.banking.dataset import Dataset, Scenario
from tasks.banking.labels.model import LabelsError, ScenarioLabels, decided

ID = re.compile(r"^(?P<domain>[a-z]+)-(?P<index>\d{3,})$")
PerScenario = dict[str, list[str]]


def file_version(path: Path) -> str:
    """The file's content hash: the same labels give the same version wherever the file lives."""
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def read_labels_file(path: Path) -> PerScenario | LabelsFile:
    """Either format, validated in shape (not yet against a dataset)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise LabelsError(f"--labels file:{path}: cannot read ({exc.strerror})") from None
    except ValueError as exc:
        raise LabelsError(f"--labels file:{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise LabelsError(f"--labels file:{path}: expected a JSON object of scenario id -> tools")
    per_goal = "format" in data or "scenarios" in data
    if not per_goal and any(isinstance(v, dict) for v in data.values()):
        data, per_goal = {"scenarios": data}, True  # the per-goal map without its header
    if per_goal:
        try:
            return LabelsFile.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(p) for p in first["loc"]) or "(root)"
            raise LabelsError(f"--labels file:{path}: {loc}: {first['msg']}") from None
    bad = [
        key
        for key, tools in data.items()
        if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools)
    ]
    if bad:
        raise LabelsError(f"--labels file:{path}: not a list of tool names for {', '.join(bad)}")
    return data


def tools_of(labels: PerScenario | LabelsFile) -> dict[str, list[str]]:
    """Every tool each scenario's entry names (any format)."""
    if isinstance(labels, LabelsFile):
        return {sid: [t for g in entry.goals for t in g.tools]
                for sid, entry in labels.scenarios.items()}
    return labels


def check(
    labels: PerScenario | LabelsFile, path: Path, dataset: Dataset, wanted: list[Scenario]
) -> None:
    """Raise naming every unknown id, unknown tool, scenario without labels and goal mismatch."""
    named = tools_of(labels)
    problems = []
    unknown_ids = []
    for key in named:
        found = ID.match(key)
        if (
            not found
            or found["domain"] != dataset.domain
            or int(found["index"]) >= dataset.n_scenario_rows
        ):
            unknown_ids.append(key)
    if unknown_ids:
        problems.append(
            f"unknown scenario ids {', '.join(sorted(unknown_ids))} "
            f"({dataset.domain}-000 … {dataset.domain}-{dataset.n_scenario_rows - 1:03d} exist)"
        )
    known_tools = set(dataset.tool_names)
    unknown_tools = sorted({t for tools in named.values() for t in tools if t not in known_tools})
    if unknown_tools:
        problems.append(f"unknown tools {', '.join(unknown_tools)}")
    missing = [s.scenario_id for s in wanted if s.scenario_id not in named]
    if missing:
        problems.append(f"no entry for {', '.join(missing)}")
    if isinstance(labels, LabelsFile):
        problems += _goal_problems(labels, wanted)
    if problems:
        raise LabelsError(f"--labels file:{path}: " + "; ".join(problems))


def _goal_problems(labels: LabelsFile, wanted: list[Scenario]) -> list[str]:
    problems = []
    for scenario in wanted:
        entry = labels.scenarios.get(scenario.scenario_id)
        if entry is None:
            continue
        goals = scenario.row.user_goals
        if len(entry.goals) != len(goals):
            problems.append(f"{scenario.scenario_id} has {len(goals)} goals, the file labels "
                            f"{len(entry.goals)}")
            continue
        for i, (label, text) in enumerate(zip(entry.goals, goals, strict=True)):
            if label.goal is not None and label.goal.strip() != text.strip():
                problems.append(f"{scenario.scenario_id} goal {i} quotes {label.goal!r}, "
                                f"the dataset says {text!r}")
    return problems


def label_all(path: Path, dataset: Dataset, wanted: list[Scenario]) -> dict[str, ScenarioLabels]:
    labels = read_labels_file(path)
    check(labels, path, dataset, wanted)
    if isinstance(labels, LabelsFile):
        return {
            s.scenario_id: ScenarioLabels.from_goals([
                decided(i, text, g.tools, g.no_tool, g.reason)  # the dataset's text, not a quote
                for i, (text, g) in enumerate(zip(s.row.user_goals,
                                                  labels.scenarios[s.scenario_id].goals,
                                                  strict=True))
            ])
            for s in wanted
        }
    return {s.scenario_id: ScenarioLabels.per_scenario(labels[s.scenario_id], s.row.user_goals)
            for s in wanted}
