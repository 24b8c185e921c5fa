"""Gold label sets kept apart from the sample a labeller may be tuned on.

Each folder holds scenario and persona rows in the sample's shape (the tools are the sample's)
and `gold_labels.json` in the per-goal labels-file format. `heldout/` was written before any
labeller it judges and is never used to tune one (see its README); `heldout2/` was written
later, blind to every labeller and to the other sets' goals, and is never tuned on either;
`tuning/` is in-sample: hand-written to widen what a labeller may be tuned on (paraphrases,
no-tool goals).
"""

from __future__ import annotations

import json
from pathlib import Path

from tasks.banking import sample
from tasks.banking.raw import RawDataset

GOLDSETS_DIR = Path(__file__).resolve().parent


def gold_path(name: str) -> Path:
    return GOLDSETS_DIR / name / "gold_labels.json"


def raw_dataset(name: str) -> RawDataset:
    folder = GOLDSETS_DIR / name
    lines = (folder / "adaptive_tool_use.jsonl").read_text(encoding="utf-8").splitlines()
    return RawDataset(
        tools=sample.tool_rows(),
        personas=json.loads((folder / "personas.json").read_text(encoding="utf-8")),
        scenarios=[json.loads(line) for line in lines if line.strip()],
        revision=f"goldset-{name}",
        origin=f"goldset {name}",
    )
