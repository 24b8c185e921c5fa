"""`--labels file:PATH`: curated expected tools per scenario, `{"banking-007": ["tool", …]}`.

The file maps scenario ids to tool names (a multiset in goal order). Every scenario being
built must have an entry, every tool must exist in the domain's tool list, and every id must
name a row of the split; anything else stops the build with the culprits named.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from tasks.banking.dataset import Dataset, Scenario
from tasks.banking.labels.model import LabelsError, ScenarioLabels

ID = re.compile(r"^(?P<domain>[a-z]+)-(?P<index>\d{3,})$")


def file_version(path: Path) -> str:
    """The file's content hash: the same labels give the same version wherever the file lives."""
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def read_labels_file(path: Path) -> dict[str, list[str]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise LabelsError(f"--labels file:{path}: cannot read ({exc.strerror})") from None
    except ValueError as exc:
        raise LabelsError(f"--labels file:{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise LabelsError(f"--labels file:{path}: expected a JSON object of scenario id -> tools")
    bad = [
        key
        for key, tools in data.items()
        if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools)
    ]
    if bad:
        raise LabelsError(f"--labels file:{path}: not a list of tool names for {', '.join(bad)}")
    return data


def check(
    labels: dict[str, list[str]], path: Path, dataset: Dataset, wanted: list[Scenario]
) -> None:
    """Raise naming every unknown id, unknown tool and scenario without labels."""
    problems = []
    unknown_ids = []
    for key in labels:
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
    unknown_tools = sorted({t for tools in labels.values() for t in tools if t not in known_tools})
    if unknown_tools:
        problems.append(f"unknown tools {', '.join(unknown_tools)}")
    missing = [s.scenario_id for s in wanted if s.scenario_id not in labels]
    if missing:
        problems.append(f"no entry for {', '.join(missing)}")
    if problems:
        raise LabelsError(f"--labels file:{path}: " + "; ".join(problems))


def label_all(path: Path, dataset: Dataset, wanted: list[Scenario]) -> dict[str, ScenarioLabels]:
    labels = read_labels_file(path)
    check(labels, path, dataset, wanted)
    return {s.scenario_id: ScenarioLabels(expected_tools=labels[s.scenario_id]) for s in wanted}
