"""Per-tool confusion of a labelling method against in-sample gold: for each gold tool (and for
goals no tool serves), how often the method chose it, what it chose instead, and how often it
declined.

    python benchmarks/labelling_confusion.py [--method sentence]

In-sample only (the bundled sample's gold and the tuning set, pooled): this is the table a
method is improved from; the held-out sets are never looked at here.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.labelling import per_goal_gold  # noqa: E402
from tasks.banking import goldsets  # noqa: E402
from tasks.banking.dataset import load, validate  # noqa: E402
from tasks.banking.labels import label_scenarios  # noqa: E402
from tasks.banking.sample import GOLD_GOALS_PATH  # noqa: E402

NO_TOOL = "(no tool)"


def in_sample() -> list[tuple[str, object, dict]]:
    tuning = validate(goldsets.raw_dataset("tuning"), "banking")
    return [("sample", load("sample"), per_goal_gold(GOLD_GOALS_PATH)),
            ("tuning", tuning, per_goal_gold(goldsets.gold_path("tuning")))]


def confusion(method: str) -> dict[str, Counter]:
    """gold tool (first alternative, or NO_TOOL) -> Counter of what the method gave: 'right',
    a wrong tool's name, or NO_TOOL."""
    table: dict[str, Counter] = {}
    for _, dataset, gold in in_sample():
        labels = label_scenarios(method, dataset, dataset.scenarios).scenarios
        for sid, golds in gold.items():
            got = [g.tools or [] for g in labels[sid].goals] if labels[sid].mapped else []
            for alternatives, tools in zip(golds, got, strict=True):
                key = " / ".join(sorted(alternatives)) if alternatives else NO_TOOL
                given = set(tools)
                if (not alternatives and not given) or (given and given <= alternatives):
                    outcome = "right"
                elif not given:
                    outcome = NO_TOOL
                else:
                    outcome = sorted(given - alternatives)[0] if given - alternatives else "right"
                table.setdefault(key, Counter())[outcome] += 1
    return table


def markdown(table: dict[str, Counter]) -> str:
    lines = ["| gold | goals | labelled right | declined | labelled instead |",
             "|---|---|---|---|---|"]
    for gold, counts in sorted(table.items(), key=lambda kv: -sum(kv[1].values())):
        total = sum(counts.values())
        wrong = ", ".join(f"{t} {n}" for t, n in counts.most_common()
                          if t not in ("right", NO_TOOL))
        declined = counts[NO_TOOL] if gold != NO_TOOL else "–"
        lines.append(f"| {gold} | {total} | {counts['right']} | {declined} | {wrong or '–'} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--method", default="sentence")
    args = parser.parse_args(argv)
    print(f"{args.method}, in-sample gold (sample + tuning), per goal:\n")
    print(markdown(confusion(args.method)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
