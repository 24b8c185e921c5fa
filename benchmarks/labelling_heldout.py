"""The held-out summary `python benchmarks/labelling.py --held-out-summary` prints, and the same
figures on one's own labelled data (`--gold DIR`): for a label method (the default unless
told), per gold set, the goal-level micro F1, the share of goals labelled exactly right, and the
TSQ a gold-perfect agent gets against the method's labels (the verifier's own scoring,
`tasks/banking/goldperfect.py`), each with a 95 % interval from a seeded bootstrap over
scenarios (the unit a labeller's errors cluster in); then the range of goal F1 over the sets.

Which sets are clean for the default method (`sentence@3`): `heldout3` and `heldout4` were
committed before it was written and were never read while writing it; `heldout4` has tools of
its own, unlike every other set. `heldout` chose the default method (between intent and
sentence) and is in part in-sample for that choice; `heldout2` has goals near-twin to earlier
sets' (content-word Jaccard >= 0.3). Pooled figures over sets with different tools would mix
measuring sticks, so none is printed: the range says how far one set's figure carries.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from contracts.expected import DEFAULT_LABEL_METHOD, HeldOutFigure, LabelsFile
from tasks.banking import goldperfect, goldsets
from tasks.banking.dataset import Dataset, load, validate
from tasks.banking.labels import label_scenarios
from tasks.banking.labels.curated import read_labels_file

CLEAN = ("heldout3", "heldout4")
RESAMPLES, SEED = 2000, 20261126


@dataclass(frozen=True)
class GoldSet:
    name: str
    dataset: Dataset
    gold_path: Path
    own_tools: bool = False  # a held-out set whose tools are not the sample's


def held_out(name: str) -> GoldSet:
    return GoldSet(name, validate(goldsets.raw_dataset(name), "banking"),
                   goldsets.gold_path(name),
                   (goldsets.GOLDSETS_DIR / name / "tools.json").is_file())


def own(folder: Path) -> GoldSet:
    """A dataset directory (the hub layout or the sample's) holding `gold_labels.json`."""
    path = Path(folder) / goldperfect.GOLD_FILE
    if not path.is_file():
        raise SystemExit(f"--gold {folder}: no {goldperfect.GOLD_FILE} there (a per-goal labels "
                         "file for the dataset's scenarios; see docs/labels.md)")
    return GoldSet(Path(folder).name, load(str(folder)), path)


def scenario_rows(gold_set: GoldSet, method: str = DEFAULT_LABEL_METHOD
                  ) -> list[dict[str, float]]:
    """Per scenario of a gold set: goal counts (tp, fp, fn, exact, goals) and the gold-perfect
    agent's TSQ against the method's labels."""
    dataset, name = gold_set.dataset, gold_set.name
    gold = goldperfect.read_gold(gold_set.gold_path, name)
    document = read_labels_file(gold_set.gold_path)
    if not isinstance(document, LabelsFile):
        raise SystemExit(f"{gold_set.gold_path}: needs the per-goal labels-file format "
                         "(bankbench-labels/2), not tools per scenario")
    per_goal = {sid: [set(g.tools) for g in entry.goals]
                for sid, entry in document.scenarios.items()}
    labels = label_scenarios(method, dataset, dataset.scenarios).scenarios
    rows = []
    for sid, golds in per_goal.items():
        got = labels[sid]
        choices = got.goals if got.mapped else []
        counts = {"tp": 0, "fp": 0, "fn": 0, "exact": 0, "goals": len(golds)}
        for alternatives, choice in zip(golds, choices, strict=True):
            tools = set(choice.tools or [])
            hit = bool(tools & alternatives)
            counts["tp"] += hit
            counts["fp"] += len(tools - alternatives)
            counts["fn"] += bool(alternatives) and not hit
            counts["exact"] += (not alternatives and not tools) or (bool(tools)
                                                                   and tools <= alternatives)
        expected = {"expected_tools": got.expected_tools,
                    "goals": [{"tools": c.tools, "no_tool": c.no_tool} for c in choices]}
        counts["perfect_tsq"] = goldperfect.score(expected, gold.calls[sid], name).tsq
        rows.append(counts)
    return rows


def figures(rows: list[dict[str, float]]) -> dict[str, float]:
    def of(sample: list[dict[str, float]]) -> tuple[float, float, float]:
        tp, fp, fn = (sum(r[k] for r in sample) for k in ("tp", "fp", "fn"))
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        exact = sum(r["exact"] for r in sample) / sum(r["goals"] for r in sample)
        return f1, exact, float(np.mean([r["perfect_tsq"] for r in sample]))

    point = of(rows)
    rng = np.random.default_rng(SEED)
    draws = np.array([of([rows[i] for i in rng.integers(0, len(rows), len(rows))])
                      for _ in range(RESAMPLES)])
    low, high = np.quantile(draws, [0.025, 0.975], axis=0)
    out: dict[str, float] = {"scenarios": len(rows), "goals": sum(r["goals"] for r in rows)}
    for k, key in enumerate(("goal_f1", "exact", "perfect_tsq")):
        out |= {key: point[k], f"{key}_low": low[k], f"{key}_high": high[k]}
    return out


def as_figure(name: str, f: dict[str, float], own_tools: bool) -> HeldOutFigure:
    """One set's figures as a task records them (`labels.quality.sets`)."""
    return HeldOutFigure(gold_set=name, scenarios=int(f["scenarios"]), goals=int(f["goals"]),
                         goal_f1=round(f["goal_f1"], 3), goal_f1_low=round(f["goal_f1_low"], 3),
                         goal_f1_high=round(f["goal_f1_high"], 3),
                         goal_exact=round(f["exact"], 3), clean=name in CLEAN,
                         own_tools=own_tools)


def line(name: str, f: dict[str, float]) -> str:
    cells = [f"{f[k]:.3f} [{f[k + '_low']:.3f}, {f[k + '_high']:.3f}]"
             for k in ("goal_f1", "exact", "perfect_tsq")]
    return f"{name:<28}{f['scenarios']:>10.0f}{f['goals']:>7.0f}  " + "  ".join(
        f"{c:>22}" for c in cells)


def print_summary(sets: list[GoldSet], method: str = DEFAULT_LABEL_METHOD,
                  title: str = "held-out summary") -> list[HeldOutFigure]:
    print(f"{title} of `{method}` (95% scenario bootstrap, {RESAMPLES} resamples)\n")
    head = (f"{'gold set':<28}{'scenarios':>10}{'goals':>7}  {'goal F1':>22}  "
            f"{'exact share':>22}  {'gold-perfect TSQ':>22}")
    print(head + "\n" + "-" * len(head))
    out = []
    for gold_set in sets:
        f = figures(scenario_rows(gold_set, method))
        mark = ("" if gold_set.name in CLEAN else " *") + (" (own tools)" if gold_set.own_tools
                                                             else "")
        print(line(gold_set.name + mark, f))
        out.append(as_figure(gold_set.name, f, gold_set.own_tools))
    if len(out) > 1:
        low = min(out, key=lambda s: s.goal_f1)
        high = max(out, key=lambda s: s.goal_f1)
        print(f"\ngoal F1 ranges {low.goal_f1:.3f} ({low.gold_set}) to {high.goal_f1:.3f} "
              f"({high.gold_set}) over {len(out)} sets")
    if any(s.gold_set not in CLEAN for s in out) and title == "held-out summary":
        print("* not clean: heldout chose the default method; heldout2 has near-twins of "
              "earlier sets' goals")
    return out
