"""Gold label sets kept apart from the sample a labeller may be tuned on.

Each folder holds scenario and persona rows in the sample's shape (the tools are the sample's unless
the folder has a `tools.json` of its own) and `gold_labels.json` in the per-goal labels-file
format. `heldout/` was written before any
labeller it judges and is never used to tune one (see its README); `heldout2/` was written
later, blind to every labeller and to the other sets' goals, and is never tuned on either;
`heldout3/` was written after both, from a different brief (customers typing into a chat queue,
context before the ask, shorthand and non-native phrasing, transfers asked for without the
word), with no goal a near-twin of any goal of the sample or the other sets (`near_twins`);
`heldout4/` was written after those, with a tool set of its own (another bank's 20 tools: some
serve requests the sample's tools cannot, such as ordering cheques or refunding a fee, and
requests the sample's tools serve are left to none), so that a labeller's rules are measured
against tools they were not written from; `tuning/` is in-sample: hand-written to widen what a
labeller may be tuned on (paraphrases, no-tool goals).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from tasks.banking import sample
from tasks.banking.raw import RawDataset

GOLDSETS_DIR = Path(__file__).resolve().parent
# Near-twin rule for a new held-out set: two goals whose content words overlap this much
# (Jaccard) are one goal said twice, and a labeller right on one is right on the other.
TWIN_JACCARD = 0.3
_STOP = frozenset(
    "a an the and or but if of to in on at for from with by is are was were be been am i me my "
    "mine you your we our us he she it its they them their this that these those what which "
    "who whom how can could would should will shall do does did have has had not no yes so "
    "just please can't don't im i'm it's any some all about into over after before out up "
    "down then than there here also too very as".split())


def gold_path(name: str) -> Path:
    return GOLDSETS_DIR / name / "gold_labels.json"


def raw_dataset(name: str) -> RawDataset:
    """A gold set's rows; its tools are its own `tools.json` when it has one, else the
    sample's."""
    folder = GOLDSETS_DIR / name
    lines = (folder / "adaptive_tool_use.jsonl").read_text(encoding="utf-8").splitlines()
    own_tools = folder / "tools.json"
    return RawDataset(
        tools=sample.tool_rows(own_tools if own_tools.is_file() else None),
        personas=json.loads((folder / "personas.json").read_text(encoding="utf-8")),
        scenarios=[json.loads(line) for line in lines if line.strip()],
        revision=f"goldset-{name}",
        origin=f"goldset {name}",
    )


def content_words(text: str) -> frozenset[str]:
    """Lower-case words of three letters or more that are not function words."""
    return frozenset(w for w in re.findall(r"[a-z]+", text.lower())
                     if len(w) > 2 and w not in _STOP)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


def near_twins(goals: list[str], others: list[str], threshold: float = TWIN_JACCARD
               ) -> list[tuple[str, str, float]]:
    """(goal, its closest other goal, their content-word Jaccard) for every goal of `goals`
    at or above `threshold` against any of `others`."""
    indexed = [(other, content_words(other)) for other in others]
    found = []
    for goal in goals:
        words = content_words(goal)
        best = max(indexed, key=lambda item: jaccard(words, item[1]), default=None)
        if best is not None and (score := jaccard(words, best[1])) >= threshold:
            found.append((goal, best[0], score))
    return found


def goals_of(name: str) -> list[str]:
    """Every goal text of a gold set (or of the bundled sample, `sample`), in order."""
    rows = sample.scenario_rows() if name == "sample" else raw_dataset(name).scenarios
    return [goal for row in rows for goal in row["user_goals"]]
