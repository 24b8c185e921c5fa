"""How close each expected-tool labelling method comes to curated gold labels.

    python benchmarks/labelling.py                      # the bundled sample and its gold labels
    python benchmarks/labelling.py --source DIR --gold labels.json

For every method, per scenario, the predicted tool set is compared with the gold set (sets, as
TSQ compares them): precision, recall and F1 pooled over all scenarios (micro) and averaged
per scenario (mean). "all-tools" (every tool expected everywhere) is a reference point, not a
method. The sensitivity of the `match` method to its two parameters is printed as well, since
its defaults were chosen on this same sample: read its figures with that in mind.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tasks.banking.dataset import Dataset, load  # noqa: E402
from tasks.banking.labels import label_scenarios  # noqa: E402
from tasks.banking.labels import match as match_method  # noqa: E402
from tasks.banking.labels.curated import read_labels_file  # noqa: E402
from tasks.banking.sample import GOLD_LABELS_PATH  # noqa: E402

Predictions = dict[str, set[str]]


def prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    """Precision, recall, F1 with the TSQ convention: both sets empty scores 1."""
    if tp + fp + fn == 0:
        return 1.0, 1.0, 1.0
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def score(predicted: Predictions, gold: dict[str, set[str]]) -> dict[str, float]:
    totals = [0, 0, 0]
    per_scenario = []
    for sid, truth in gold.items():
        guess = predicted.get(sid, set())
        counts = (len(guess & truth), len(guess - truth), len(truth - guess))
        totals = [a + b for a, b in zip(totals, counts, strict=True)]
        per_scenario.append(prf(*counts))
    micro = prf(*totals)
    n = len(per_scenario)
    mean = tuple(sum(s[i] for s in per_scenario) / n for i in range(3))
    return {
        "micro_p": micro[0], "micro_r": micro[1], "micro_f1": micro[2],
        "mean_p": mean[0], "mean_r": mean[1], "mean_f1": mean[2],
        "tools_per_scenario": sum(len(p) for p in predicted.values()) / max(len(predicted), 1),
    }  # fmt: skip


def predictions(spec: str, dataset: Dataset) -> Predictions:
    labelled = label_scenarios(spec, dataset, dataset.scenarios)
    return {sid: set(s.expected_tools) for sid, s in labelled.scenarios.items()}


def methods(dataset: Dataset) -> dict[str, Callable[[], Predictions]]:
    everything = set(dataset.tool_names)
    return {
        "keyword": lambda: predictions("keyword", dataset),
        "match": lambda: predictions("match", dataset),
        "all-tools": lambda: {s.scenario_id: set(everything) for s in dataset.scenarios},
    }


def table(rows: list[tuple[str, dict[str, float]]]) -> str:
    head = (
        f"{'method':<22}{'micro P':>9}{'micro R':>9}{'micro F1':>10}"
        f"{'mean P':>9}{'mean R':>9}{'mean F1':>9}{'tools/scen':>12}"
    )
    lines = [head, "-" * len(head)]
    for name, s in rows:
        lines.append(
            f"{name:<22}{s['micro_p']:>9.3f}{s['micro_r']:>9.3f}{s['micro_f1']:>10.3f}"
            f"{s['mean_p']:>9.3f}{s['mean_r']:>9.3f}{s['mean_f1']:>9.3f}"
            f"{s['tools_per_scenario']:>12.2f}"
        )
    return "\n".join(lines)


def sensitivity(dataset: Dataset, gold: dict[str, set[str]]) -> list[tuple[str, dict[str, float]]]:
    rows = []
    defaults = (match_method.MIN_SCORE, match_method.SECOND_RATIO)
    try:
        for min_score in (2.0, 3.0, 4.0, 5.0, 6.0):
            for ratio in (0.8, 0.95, 1.01):
                match_method.MIN_SCORE, match_method.SECOND_RATIO = min_score, ratio
                mark = " *" if (min_score, ratio) == defaults else ""
                name = f"match {min_score:g}/{ratio:g}{mark}"
                rows.append((name, score(predictions("match", dataset), gold)))
    finally:
        match_method.MIN_SCORE, match_method.SECOND_RATIO = defaults
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", default="sample", help="dataset source (default: sample)")
    parser.add_argument("--domain", default="banking")
    parser.add_argument(
        "--gold", type=Path, default=GOLD_LABELS_PATH, help="curated labels file (JSON)"
    )
    args = parser.parse_args(argv)

    dataset = load(args.source, args.domain, on_bad_row="skip")
    gold_file = read_labels_file(args.gold)
    gold = {s.scenario_id: set(gold_file[s.scenario_id]) for s in dataset.scenarios}
    per_scenario = sum(len(g) for g in gold.values()) / len(gold)
    print(
        f"{len(gold)} scenarios, {len(dataset.tools)} tools, dataset {dataset.revision}, "
        f"gold {args.gold.name} ({per_scenario:.2f} tools/scenario)"
    )
    print()
    print(table([(name, score(run(), gold)) for name, run in methods(dataset).items()]))
    print()
    print("match sensitivity (MIN_SCORE/SECOND_RATIO; * = defaults):")
    print(table(sensitivity(dataset, gold)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
