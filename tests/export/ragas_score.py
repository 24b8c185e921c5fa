"""Score an exported tool_call_accuracy.jsonl with ragas itself; runs in the ragas venv.

    python ragas_score.py FILE.jsonl [--unordered]

Loads the file with ragas' own `EvaluationDataset.from_jsonl` (so every row must validate as
a ragas `MultiTurnSample`) and prints one JSON list: ToolCallAccuracy per row. Imports nothing
of bankbench: ragas cannot share the project's environment (see docs/export.md).
"""

import asyncio
import json
import sys
import warnings

from ragas.dataset_schema import EvaluationDataset, MultiTurnSample
from ragas.metrics import ToolCallAccuracy


async def score(path: str, strict_order: bool) -> list[float]:
    dataset = EvaluationDataset.from_jsonl(path)
    metric = ToolCallAccuracy(strict_order=strict_order)
    scores = []
    for sample in dataset:
        assert isinstance(sample, MultiTurnSample), type(sample)
        scores.append(float(await metric.multi_turn_ascore(sample)))
    return scores


if __name__ == "__main__":
    warnings.simplefilter("ignore")  # ragas warns on every length mismatch
    print(json.dumps(asyncio.run(score(sys.argv[1], "--unordered" not in sys.argv[2:]))))
