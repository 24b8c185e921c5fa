"""How far a judge model agrees with the gold sets on trials whose quality is known.

For every scenario of a gold set (held-out: tasks/banking/goldsets/heldout/gold_labels.json;
sample: tasks/banking/sample/gold_goals.json) two synthetic sessions are built from the gold
labels alone:

- perfect: one accepted call of each served goal's first gold tool, in goal order, and a
  final answer that reports every served goal done and says plainly which goals the bank
  cannot serve;
- imperfect: the last served goal's call left out and one call replaced by a tool no goal of
  the scenario lists, while the final answer still claims everything was done.

Each session goes through the same prompt and client as `bankbench judge`. Printed per metric
(tool selection quality, action completion): *ordering agreement* (share of scenarios where
the judge scores perfect above imperfect), *perfect ≥ 0.5* and *imperfect < 0.5* (agreement
with the gold verdict at a 0.5 threshold), and how many answers were unparseable or failed.
The gold sets were written before this judge and its prompt; nothing is tuned on them.

    python benchmarks/judge_agreement.py                      # prints what it would measure
    python benchmarks/judge_agreement.py --base-url URL --model NAME [--api-key-env VAR]
        [--gold heldout|sample|both] [--limit N] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from analysis.judge.client import JudgeClient  # noqa: E402
from analysis.judge.prompt import DEFAULT_VERSION, load_prompt, messages  # noqa: E402
from analysis.trial_inputs import BankCall, Goal, TrialInputs  # noqa: E402
from contracts.judge import METRICS, JudgeSample  # noqa: E402

GOLD = {
    "heldout": REPO / "tasks/banking/goldsets/heldout/gold_labels.json",
    "sample": REPO / "tasks/banking/sample/gold_goals.json",
}
TOOLS = REPO / "tasks/banking/sample/tools.json"


def _tools() -> list[str]:
    return [t["title"] for t in json.loads(TOOLS.read_text(encoding="utf-8"))]


def sessions(gold_set: str, scenario_id: str, goals: list[dict], tools: list[str]
             ) -> dict[str, TrialInputs]:
    """(perfect, imperfect) synthetic sessions of one gold scenario."""
    texts = [g["goal"] for g in goals]
    served = [(g["goal"], g["tools"][0]) for g in goals if g.get("tools")]
    declined = [g["goal"] for g in goals if not g.get("tools")]
    listed = {t for g in goals for t in g.get("tools") or []}
    wrong = next(t for t in tools if t not in listed)
    done = "; ".join(f"done: {goal}" for goal, _ in served)
    cannot = "; ".join(f"the bank has no way to do this, so I did not: {g}" for g in declined)
    claim_all = "Everything you asked for is done."

    def inputs(kind: str, calls: list[tuple[str, str]], final: str) -> TrialInputs:
        return TrialInputs(
            scenario_id=f"{gold_set}-{scenario_id}-{kind}",
            instruction=" ".join(texts), goals=[Goal(text=t) for t in texts],
            known_tools=tools,
            calls=[BankCall(seq=n, tool=tool, arguments={"request": goal}, valid=True)
                   for n, (goal, tool) in enumerate(calls, start=1)],
            final_answer=final)

    imperfect = served[:-1] if len(served) > 1 else []
    if imperfect:
        imperfect[0] = (imperfect[0][0], wrong)
    return {"perfect": inputs("perfect", served, f"{done}. {cannot}".strip(" .") + "."),
            "imperfect": inputs("imperfect", imperfect, claim_all)}


def judge_all(client: JudgeClient, gold_set: str, limit: int | None,
              annotations: list[str]) -> list[dict]:
    prompt = load_prompt(DEFAULT_VERSION)
    gold = json.loads(GOLD[gold_set].read_text(encoding="utf-8"))
    tools = _tools()
    rows = []
    for scenario_id in sorted(gold)[:limit]:
        row: dict = {"set": gold_set, "scenario": scenario_id}
        for kind, trial in sessions(gold_set, scenario_id, gold[scenario_id]["goals"],
                                    tools).items():
            nvext = ({"annotations": [a.format(scenario_id=trial.scenario_id, sample=0)
                                      for a in annotations]} if annotations else None)
            row[kind] = client.sample(messages(prompt, trial), 0.0, nvext)
        rows.append(row)
    return rows


def agreement(rows: list[dict]) -> dict:
    """Per metric: ordering agreement and threshold agreement over scenarios both of whose
    sessions were parsed; unusable answers are counted apart, never scored."""
    out: dict = {"scenarios": len(rows),
                 "unusable": sum(r[k].status != "ok" for r in rows for k in ("perfect",
                                                                             "imperfect"))}
    both = [r for r in rows if r["perfect"].status == r["imperfect"].status == "ok"]
    out["scored_pairs"] = len(both)
    for metric in METRICS:
        def score(sample: JudgeSample) -> float:
            return getattr(sample, metric).score  # noqa: B023

        n = len(both) or 1
        out[metric] = {
            "ordering": sum(score(r["perfect"]) > score(r["imperfect"]) for r in both) / n,
            "perfect_high": sum(score(r["perfect"]) >= 0.5 for r in both) / n,
            "imperfect_low": sum(score(r["imperfect"]) < 0.5 for r in both) / n,
        } if both else None
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", help="The judge's OpenAI-compatible base URL.")
    parser.add_argument("--model", help="The judge model's name.")
    parser.add_argument("--api-key-env", default=None, help="Variable holding the key.")
    parser.add_argument("--gold", choices=("heldout", "sample", "both"), default="both")
    parser.add_argument("--limit", type=int, default=None, help="Scenarios per gold set.")
    parser.add_argument("--nvext-annotation", action="append", default=[],
                        help="Dynamo nvext annotation, formatted with {scenario_id}, {sample}.")
    parser.add_argument("--json", action="store_true", help="Also print one JSON line.")
    args = parser.parse_args(argv)
    sets = ["heldout", "sample"] if args.gold == "both" else [args.gold]
    if not args.base_url or not args.model:
        for name in sets:
            count = len(json.loads(GOLD[name].read_text(encoding="utf-8")))
            print(f"{name}: would judge {min(count, args.limit or count)} perfect and as many "
                  f"imperfect synthetic sessions ({GOLD[name].relative_to(REPO)}) and print "
                  "ordering and 0.5-threshold agreement per metric; give --base-url and "
                  "--model to run")
        return 0
    key = os.environ.get(args.api_key_env) if args.api_key_env else None
    client = JudgeClient(args.base_url, args.model, key)
    results = {}
    try:
        for name in sets:
            started = time.perf_counter_ns()
            result = agreement(judge_all(client, name, args.limit, args.nvext_annotation))
            result["seconds"] = (time.perf_counter_ns() - started) / 1e9
            results[name] = result
    finally:
        client.close()
    print(f"judge {args.model} at {args.base_url}, prompt {DEFAULT_VERSION}, temperature 0")
    print("set      metric                  pairs  ordering  perfect>=0.5  imperfect<0.5  "
          "unusable")
    for name, result in results.items():
        for metric in METRICS:
            figures = result[metric]
            cells = ("   –      " * 3 if figures is None else
                     f"{figures['ordering']:8.2f}  {figures['perfect_high']:12.2f}  "
                     f"{figures['imperfect_low']:13.2f}")
            print(f"{name:8} {metric:23} {result['scored_pairs']:5}  {cells}  "
                  f"{result['unusable']:8}")
    if args.json:
        print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
