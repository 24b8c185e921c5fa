"""The bundled sample: an original banking dataset in the published schema, plus gold labels.

Stored readable beside this file: `tools.json` (parameter and response schemas as JSON
objects), `personas.json`, `adaptive_tool_use.jsonl` (one scenario per line) and
`gold_labels.json` (curated expected tools per scenario, the `--labels file:` format), and
`gold_goals.json` (the same labels per goal, with the two goals no tool serves). The
loader turns tool schemas back into the JSON-string columns of the hub data, so the sample
passes through exactly the validators the real data does.

Bump SAMPLE_VERSION whenever a row file here changes: it is the dataset revision tasks record.
"""

from __future__ import annotations

import json
from pathlib import Path

from tasks.banking.raw import RawDataset

SAMPLE_VERSION = "1"
SAMPLE_DIR = Path(__file__).resolve().parent
GOLD_LABELS_PATH = SAMPLE_DIR / "gold_labels.json"
# The same gold per goal (the per-goal labels-file format), for per-goal scoring and tuning.
GOLD_GOALS_PATH = SAMPLE_DIR / "gold_goals.json"


def _load(name: str):
    return json.loads((SAMPLE_DIR / name).read_text(encoding="utf-8"))


def tool_rows(path: Path | None = None) -> list[dict]:
    """Tools as hub rows: `properties` and `response_schema` as JSON strings; from `path`, a
    file of the sample's `tools.json` shape, when given (a gold set with tools of its own)."""
    tools = _load("tools.json") if path is None else json.loads(path.read_text(encoding="utf-8"))
    rows = []
    for tool in tools:
        row = dict(tool)
        row["properties"] = json.dumps(tool["properties"])
        row["response_schema"] = json.dumps(tool["response_schema"])
        rows.append(row)
    return rows


def scenario_rows() -> list[dict]:
    text = (SAMPLE_DIR / "adaptive_tool_use.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def raw_dataset() -> RawDataset:
    return RawDataset(
        tools=tool_rows(),
        personas=_load("personas.json"),
        scenarios=scenario_rows(),
        revision=f"sample-{SAMPLE_VERSION}",
        origin="sample",
    )


def gold_labels() -> dict[str, list[str]]:
    """Curated expected tools per scenario id, in goal order."""
    return _load(GOLD_LABELS_PATH.name)
