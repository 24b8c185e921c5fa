"""Read exported file sets back with ragas itself; runs in the ragas venv.

    python ragas_score.py DIR [DIR ...]

Loads each dataset file of each DIR with ragas' own `EvaluationDataset.from_jsonl` (so every
row must validate as a ragas `MultiTurnSample`), checks that each row has the columns the
matching ragas metric requires, and scores ToolCallAccuracy with both of ragas' APIs (the
sample-based metric and the newer `ragas.metrics.collections` one), in strict order and
unordered. Prints one JSON object per DIR, one per line, in the order given:
{"rows": {file stem: n}, "tool_call_accuracy": [...], "collections": [...],
 "tool_call_accuracy_unordered": [...], "collections_unordered": [...]}.
Several DIRs in one run import ragas once (its import takes seconds).
Imports nothing of bankbench: ragas cannot share the project's environment (docs/export.md).
"""

import asyncio
import json
import sys
import warnings
from pathlib import Path

from ragas.dataset_schema import EvaluationDataset, MultiTurnSample
from ragas.metrics import AgentGoalAccuracyWithReference, ToolCallAccuracy, TopicAdherenceScore
from ragas.metrics.base import MetricType
from ragas.metrics.collections import ToolCallAccuracy as CollectionsToolCallAccuracy

METRICS = {
    "tool_call_accuracy": ToolCallAccuracy,
    "agent_goal_accuracy": AgentGoalAccuracyWithReference,
    "topic_adherence": TopicAdherenceScore,
}


def load(directory: Path, stem: str) -> list[MultiTurnSample]:
    dataset = EvaluationDataset.from_jsonl(directory / f"{stem}.jsonl")
    required = METRICS[stem]().required_columns[MetricType.MULTI_TURN.name]
    for sample in dataset:
        assert isinstance(sample, MultiTurnSample), type(sample)
        missing = set(required) - set(sample.get_features())
        assert not missing, f"{stem}: row without {sorted(missing)}"
    return list(dataset)


async def scores(samples: list[MultiTurnSample], strict_order: bool) -> tuple[list, list]:
    legacy = ToolCallAccuracy(strict_order=strict_order)
    current = CollectionsToolCallAccuracy(strict_order=strict_order)
    return ([float(await legacy.multi_turn_ascore(s)) for s in samples],
            [float((await current.ascore(user_input=s.user_input,
                                         reference_tool_calls=s.reference_tool_calls)).value)
             for s in samples])


async def main(directory: Path) -> dict:
    samples = {stem: load(directory, stem) for stem in METRICS}
    strict, strict_collections = await scores(samples["tool_call_accuracy"], True)
    unordered, unordered_collections = await scores(samples["tool_call_accuracy"], False)
    return {
        "rows": {stem: len(rows) for stem, rows in samples.items()},
        "tool_call_accuracy": strict, "collections": strict_collections,
        "tool_call_accuracy_unordered": unordered, "collections_unordered": unordered_collections,
    }


if __name__ == "__main__":
    warnings.simplefilter("ignore")  # ragas warns on every length mismatch and deprecation
    for arg in sys.argv[1:]:
        print(json.dumps(asyncio.run(main(Path(arg)))))
