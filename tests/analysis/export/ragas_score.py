"""Read an exported file set back with ragas itself; runs in the ragas venv.

    python ragas_score.py DIR [--unordered]

Loads each dataset file of DIR with ragas' own `EvaluationDataset.from_jsonl` (so every row
must validate as a ragas `MultiTurnSample`), checks that each row has the columns the
matching ragas metric requires, and scores ToolCallAccuracy with both of ragas' APIs (the
sample-based metric and the newer `ragas.metrics.collections` one). Prints one JSON object:
{"rows": {file stem: n}, "tool_call_accuracy": [...], "collections": [...]}.
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


async def main(directory: Path, strict_order: bool) -> dict:
    samples = {stem: load(directory, stem) for stem in METRICS}
    legacy = ToolCallAccuracy(strict_order=strict_order)
    current = CollectionsToolCallAccuracy(strict_order=strict_order)
    tool_samples = samples["tool_call_accuracy"]
    return {
        "rows": {stem: len(rows) for stem, rows in samples.items()},
        "tool_call_accuracy": [float(await legacy.multi_turn_ascore(s)) for s in tool_samples],
        "collections": [
            float((await current.ascore(user_input=s.user_input,
                                        reference_tool_calls=s.reference_tool_calls)).value)
            for s in tool_samples],
    }


if __name__ == "__main__":
    warnings.simplefilter("ignore")  # ragas warns on every length mismatch and deprecation
    print(json.dumps(asyncio.run(main(Path(sys.argv[1]), "--unordered" not in sys.argv[2:]))))
