"""Error rates of the tool-call integrity check, by simulation through the code the product runs.

Every reply goes the product's way: an SSE reply shaped like the Dynamo frontend's
(tests/support/tool_call_faults.py · frontend_reply), broken by the same fault injection the
fault-injecting test proxy applies on the real stack (`corrupt`), read by the agent's stream
parser (agents/sse.py · StreamParser, tool_stream), classified by analysis/metrics/integrity.py
· classify; the per-level table and its verdicts come from analysis/integrity.py · level_table.
What is simulated is which replies break: a sweep of --scenarios x --repeats trials of
--replies agent replies each at levels 1, 2, 4, 8, each class injected from c4 on.

    .venv/bin/python benchmarks/tool_call_integrity.py                 # the stated design
    .venv/bin/python benchmarks/tool_call_integrity.py --runs 100 --hard   # + the hard cases
    .venv/bin/python benchmarks/tool_call_integrity.py --runs 0 --stack unterminated
                                            # on real parts: a capacity search per class named
    .venv/bin/python benchmarks/tool_call_integrity.py --runs 0 --llamacpp

Prints, per class, at the design (rate --rate per reply from c4, a clean baseline):

    class <name>: detected at c4 in X of N runs, false alarms Y of N below it

(detected: the class's own row is `worse` at c4; a false alarm: any class `worse` at c2), then
with --hard the same figures under conditions the rule was not designed for — each class at
low rates, a baseline that already fails (every class, at every level), faults in a quarter of
the scenarios only, faults in bursts that hit every reply in flight, per-scenario rates that
differ — and null sweeps (nothing injected; noise, heterogeneity or bursts at every level) for
the false-alarm rate over all levels. The worst case of each column is printed last.

With --llamacpp, llama.cpp's own tool parser (its OpenAI server, SmolLM2-135M) through the
same proxy (tests/support/integrity_llamacpp.py): a call it completes must fall in no class, a
call max_tokens cuts (which its parser drops without a trace) must be a call cut by length, and
replies broken while two are in flight must land in the injected class; each is printed with
"as expected" or "NOT as expected".

With --stack the classes named (all when none is) also run once each on real parts: `bankbench
capacity --slo tool_call_error_rate=0.01` against the real Dynamo frontend with the mocker
engine, the fault-injecting test proxy breaking replies in flight with more than two requests
(tests/support/integrity_stack.py; one stack of two mocker workers for all classes, 10
scenarios, levels up to 4). Per class it prints the lowest level the report marks worse, any
class marked at c1–c2 (a false alarm), where the search stopped, and whether the report carries
the integrity table, its figure and the validity block (the workers it names).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from agents.sse import StreamParser, tool_stream  # noqa: E402
from analysis.integrity import level_table  # noqa: E402
from analysis.metrics.integrity import COLUMNS, PREFIX, classify, tool_schemas  # noqa: E402
from tests.support.tool_call_faults import FAULTS, corrupt, frontend_reply  # noqa: E402

LEVELS = (1, 2, 4, 8)
INJECTED_AT = 4
# A banking tool as the tasks ship it (a required string, an enum, a number).
TOOL = {"type": "function", "function": {
    "name": "transfer_funds", "description": "Move money between two accounts.",
    "parameters": {"type": "object", "properties": {
        "from_account": {"type": "string"}, "to_account": {"type": "string"},
        "amount": {"type": "number"}, "currency": {"type": "string", "enum": ["USD", "EUR"]}},
        "required": ["from_account", "to_account", "amount"]}}}
CALL = ("transfer_funds", {"from_account": "12345678", "to_account": "87654321",
                           "amount": 25, "currency": "USD"})


@dataclass(frozen=True)
class Condition:
    name: str
    rate: float  # per reply, at injected levels (or everywhere for a null condition)
    baseline: float = 0.0  # every level: a random class per failing reply
    scenario_share: float = 1.0  # the share of scenarios the fault can hit
    burst: bool = False  # faults hit whole time slots (every reply in flight together)
    spread: float = 0.0  # per-scenario rates ~ Beta with this concentration (0: equal)
    null: bool = False  # nothing injected: `rate` is background noise at every level


def class_vectors() -> dict[str, np.ndarray]:
    """Per fault (and "clean"): the class columns its reply gets, through the product's path."""
    body = frontend_reply([CALL], reply_id="bench")
    schemas = tool_schemas([TOOL])
    out = {}
    for fault in ("clean", *FAULTS):
        reply = body if fault == "clean" else corrupt(body, fault, [TOOL])
        assert reply is not None, fault
        parser = StreamParser()
        parser.feed(reply, 1)
        parser.close(2)
        classes = classify(tool_stream(parser.reply, {"tools": [TOOL], "tool_choice": "auto"}),
                           parser.reply.finish_reason, "".join(parser.reply.content), schemas)
        out[fault] = np.array([classes[c] for c in COLUMNS], dtype=float)
    assert not out["clean"].any(), "a clean reply must fall in no class"
    return out


def _slots(level: int, n_scenarios: int, repeats: int, replies: int) -> np.ndarray:
    """Each reply's time slot at a level: trials queue repeat-major and run `level` at a
    time, a trial's k-th reply in its wave's k-th slot (replies of one slot are in flight
    together)."""
    trial = np.arange(n_scenarios * repeats)
    wave = trial // level
    return (wave[:, None] * replies + np.arange(replies)[None, :]).ravel()


def draw_sweep(rng: np.random.Generator, vectors: dict[str, np.ndarray], fault: str | None,
               cond: Condition, n_scenarios: int, repeats: int, replies: int) -> pd.DataFrame:
    """One simulated sweep's requests table (the columns level_table reads)."""
    every = np.stack([vectors[f] for f in FAULTS])  # one row per fault
    injected = vectors[fault] if fault is not None else None
    hit_scenarios = rng.random(n_scenarios) < cond.scenario_share
    base_rates = (rng.beta(cond.spread * cond.rate, cond.spread * (1 - cond.rate), n_scenarios)
                  if cond.spread else np.full(n_scenarios, cond.rate))
    frames = []
    for level in LEVELS:
        scen = np.repeat(np.tile(np.arange(n_scenarios), repeats), replies)  # repeat-major
        n = len(scen)
        matrix = np.tile(vectors["clean"], (n, 1))
        if cond.baseline:
            noisy = np.flatnonzero(rng.random(n) < cond.baseline)
            matrix[noisy] = np.maximum(matrix[noisy], every[rng.integers(len(FAULTS),
                                                                         size=len(noisy))])
        if (cond.null or (injected is not None and level >= INJECTED_AT)) and cond.rate:
            if cond.burst:
                slots = _slots(level, n_scenarios, repeats, replies)
                hit = (rng.random(slots.max() + 1) < cond.rate)[slots] & hit_scenarios[scen]
            else:
                hit = rng.random(n) < base_rates[scen] * hit_scenarios[scen]
            where = np.flatnonzero(hit)
            added = (np.tile(injected, (len(where), 1)) if injected is not None
                     else every[rng.integers(len(FAULTS), size=len(where))])
            matrix[where] = np.maximum(matrix[where], added)
        frame = pd.DataFrame(matrix, columns=list(COLUMNS))
        frame["level"], frame["scenario_id"] = level, scen
        # start order: by time slot, replies of one slot in a random order
        frame["start_unix_ns"] = _slots(level, n_scenarios, repeats, replies) * n + \
            rng.permutation(n)
        frames.append(frame)
    out = pd.concat(frames, ignore_index=True)
    out["source"] = "sim"
    return out


def measure(vectors: dict[str, np.ndarray], fault: str | None, cond: Condition, runs: int,
            seed: int, n_scenarios: int, repeats: int, replies: int) -> tuple[int, int]:
    """(runs where the fault's class is worse at c4, runs with any class worse below c4 —
    or, for a null condition, at any level)."""
    rng = np.random.default_rng(seed)
    detected = false = 0
    for _ in range(runs):
        table = level_table(draw_sweep(rng, vectors, fault, cond, n_scenarios, repeats,
                                       replies))
        worse = table[table["worse"].astype(bool)]
        if fault is not None:
            detected += bool(((worse["level"] == INJECTED_AT)
                              & (worse["class"] == PREFIX + fault)).any())
        below = worse if cond.null else worse[worse["level"] < INJECTED_AT]
        false += len(below) > 0
    return detected, false


def hard_cases(design: Condition) -> list[tuple[Condition, bool]]:
    """(condition, per class?): injected hard cases per class, then null sweeps."""
    r = design.rate
    return [
        (replace(design, name=f"low rate {r / 2:g}", rate=r / 2), True),
        (replace(design, name=f"low rate {r / 4:g}", rate=r / 4), True),
        (replace(design, name="baseline already failing 3 %", baseline=0.03), True),
        (replace(design, name=f"a quarter of scenarios at {min(1.0, 2 * r):g}",
                 rate=min(1.0, 2 * r), scenario_share=0.25), True),
        (replace(design, name="bursts (whole slots in flight)", burst=True), True),
        (replace(design, name="per-scenario rates differ (Beta, k=1)", spread=1.0), True),
        (Condition("null: 3 % noise at every level", 0.03, null=True), False),
        (Condition("null: 10 % noise, rates differ by scenario", 0.10, spread=1.0,
                   null=True), False),
        (Condition("null: 5 % in bursts at every level", 0.05, burst=True, null=True), False),
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200, help="simulated sweeps per line")
    ap.add_argument("--scenarios", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--replies", type=int, default=4, help="classified agent replies per trial")
    ap.add_argument("--rate", type=float, default=0.2, help="injected faults per reply")
    ap.add_argument("--hard", action="store_true", help="also the hard cases and null sweeps")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--stack", nargs="*", metavar="CLASS", choices=FAULTS,
                    help="also a capacity search on the mocker stack per class named (all: none)")
    ap.add_argument("--stack-out", type=Path, default=None,
                    help="where the stack runs' sweeps stay (default: a temporary folder)")
    ap.add_argument("--llamacpp", action="store_true",
                    help="also llama.cpp's own tool parser through the fault proxy")
    args = ap.parse_args()
    started = time.perf_counter_ns()
    vectors = class_vectors()
    shape = (args.scenarios, args.repeats, args.replies)
    design = Condition("design", args.rate)
    print(f"design: {args.scenarios} scenarios x {args.repeats} repeats x {args.replies} "
          f"classified replies per trial, levels {', '.join(f'c{v}' for v in LEVELS)} "
          f"(reference c1), each class injected from c{INJECTED_AT} at {args.rate:g} of "
          f"replies; Holm over every (class, level) at 5 %; {args.runs} runs per class")
    for i, fault in enumerate(FAULTS if args.runs else ()):
        x, y = measure(vectors, fault, design, args.runs, args.seed + i, *shape)
        print(f"class {fault}: detected at c{INJECTED_AT} in {x} of {args.runs} runs, "
              f"false alarms {y} of {args.runs} below it", flush=True)
    if args.hard and args.runs:
        worst_detect, worst_false = (1.0, ""), (0.0, "")
        for j, (cond, per_class) in enumerate(hard_cases(design)):
            if not per_class:
                _, y = measure(vectors, None, cond, args.runs, args.seed + 1000 + j, *shape)
                print(f"{cond.name}: false alarms (any class, any level) {y} of {args.runs}")
                worst_false = max(worst_false, (y / args.runs, cond.name))
                continue
            xs, ys = [], []
            for i, fault in enumerate(FAULTS):
                x, y = measure(vectors, fault, cond, args.runs,
                               args.seed + 100 * (j + 1) + i, *shape)
                xs.append((x / args.runs, fault))
                ys.append((y / args.runs, fault))
            low, high = min(xs), max(ys)
            worst = f" ({high[1]})" if high[0] else ""
            print(f"{cond.name}: detection {low[0]:.2f} (worst class {low[1]}) to "
                  f"{max(xs)[0]:.2f}; false alarms below c{INJECTED_AT} at most "
                  f"{high[0]:.2f}{worst}", flush=True)
            worst_detect = min(worst_detect, (low[0], f"{cond.name}, {low[1]}"))
            worst_false = max(worst_false, (high[0], f"{cond.name}, {high[1]}"))
        print(f"worst detection {worst_detect[0]:.2f} ({worst_detect[1]}); worst false-alarm "
              f"rate {worst_false[0]:.2f} ({worst_false[1]})")
    if args.stack is not None:
        run_stack(args.stack or list(FAULTS), args.stack_out)
    if args.llamacpp:
        run_llamacpp()
    print(f"wall time {(time.perf_counter_ns() - started) / 1e9:.0f} s")
    return 0


def run_stack(faults: list[str], out: Path | None, scenarios: int = 10) -> None:
    """One capacity search per class on real parts, all on one mocker stack (two workers);
    what each sweep's report and capacity.json say."""
    import json
    import tempfile

    from bankbench.serve import api, replay
    from tests.support.integrity_stack import scripts, search

    root = Path(out or tempfile.mkdtemp(prefix="integrity-stack-"))
    trace = replay.write_trace(root / "trace.jsonl", scripts(scenarios))
    with api.running("cpu-mocker", workers=2, state_dir=root / "state",
                     options={"speedup_ratio": 1.0, "replay_trace": str(trace)}) as state:
        for fault in faults:
            run = search(state.base_url, state.model, root / fault, fault, above=2,
                         scenarios=scenarios, max_level=4)
            if run.done.returncode != 0:
                print(f"class {fault} (mocker stack): the search failed: "
                      f"{(run.done.stderr or run.done.stdout)[-500:]}")
                continue
            table = pd.read_csv(run.sweep / "integrity.csv")
            worse = table[table["worse"].astype(bool)]
            mine = worse.loc[worse["class"] == PREFIX + fault, "level"]
            below = worse[worse["level"] <= 2]
            record = json.loads((run.sweep / "capacity.json").read_text())
            found = f"c{int(mine.min())}" if len(mine) else "no level"
            print(f"class {fault} (mocker stack, broken above 2 in flight; {run.corrupted} "
                  f"replies): worse than c1 from {found}, false alarms {len(below)} at c1-c2; "
                  f"capacity {record['capacity']}, limited by "
                  f"{', '.join(record['limiting']) or 'nothing'} at c{record['lowest_failing']}; "
                  f"report: {report_parts(run.sweep)} ({run.sweep})", flush=True)


def run_llamacpp() -> None:
    """llama.cpp's own parser: each request's classes against what is expected of it."""
    import tempfile

    from tests.support.integrity_llamacpp import EXPECTED, INJECTED, llamacpp_classes

    seen, corrupted = llamacpp_classes(Path(tempfile.mkdtemp(prefix="integrity-llamacpp-")))
    for name, expected in EXPECTED.items():
        got = seen[name]
        shown = "; ".join(f"{', '.join(sorted(c)) or 'no class'} (calls read: {n})" for c, n in got)
        print(f"llama.cpp {name}: {shown} — {'as' if got == expected else 'NOT as'} expected",
              flush=True)
    print(f"llama.cpp: the proxy broke {corrupted} replies ({INJECTED} while 2 in flight)")


def _section(text: str, title: str) -> str | None:
    """The body of report.md's section `title` (None when it has none)."""
    head = f"## {title}"
    return text.split(head)[1].split("\n## ")[0] if head in text else None


def report_parts(sweep: Path) -> str:
    """Which of the integrity table, its figure and the validity block (with the workers it
    names) the sweep's report.md carries."""
    import re

    text = (sweep / "report.md").read_text()
    integrity = _section(text, "Tool-call integrity vs concurrency") or ""
    validity = _section(text, "Validity of the run")
    figure = (sweep / "plots" / "integrity_vs_concurrency.png").is_file()
    workers = len(set(re.findall(r"…\w{6}", validity or "")))  # as the block shortens ids
    return ", ".join([
        "integrity table" if "| class" in integrity else "NO integrity table",
        "figure" if figure else "NO figure",
        "NO validity block" if validity is None else
        f"validity block ({workers} workers named)"])


if __name__ == "__main__":
    raise SystemExit(main())
