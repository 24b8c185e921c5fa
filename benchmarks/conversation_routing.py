"""Does kv-aware routing pay off in conversation mode? Cached prompt share and TTFT by turn.

In conversation mode every customer turn re-sends the whole conversation, so each turn's
prompt is the previous one plus a little: a router that sends a conversation back to the
worker holding its prefix should serve most of it from cache, and the share should grow with
the turn. In goals mode a trial has one turn (its prompt grows only over ReAct steps).

This runs `bankbench sweep` on cpu-mocker (real Dynamo frontend, 4 mocker workers) over the
bundled sample scenarios once per mode (conversation, goals), each under the kv router and
round-robin (`--routers`, a fresh stack per router), then prints, for each mode × router, the
agent's requests by turn index: count, TTFT p50/p90 (perf_counter_ns on the streamed chunks),
mean prompt tokens and the cached prompt share (the server's
`usage.prompt_tokens_details.cached_tokens` / `prompt_tokens`), plus the per-conversation
figures of the report. The simulated customer's calls (if an llm customer was used) are not
in these figures.

    .venv/bin/python benchmarks/conversation_routing.py                  # run, then print
    .venv/bin/python benchmarks/conversation_routing.py --levels 2,4 --max-turns 6
    .venv/bin/python benchmarks/conversation_routing.py --sweeps DIR     # print an earlier run

DIR holds one multi-router sweep per mode, `DIR/<mode>/r-<router>/` (what a run writes).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from analysis import turns
from analysis.markdown import table
from analysis.tables import load_many
from contracts.sweep import router_dir_name

MODES = ("conversation", "goals")
ROUTERS = ("kv", "round-robin")


def run_sweeps(root: Path, modes: list[str], routers: list[str], levels: str, limit: int | None,
               max_turns: int | None, workers: int, extra: list[str]) -> None:
    """One `bankbench sweep --routers …` per mode into `root/<mode>/`."""
    for mode in modes:
        cmd = [sys.executable, "-m", "bankbench", "sweep", "--profile", "cpu-mocker",
               "--workers", str(workers), "--routers", ",".join(routers), "--mode", mode,
               "--source", "sample", "--levels", levels, "--out", str(root), "--name", mode,
               *(["--limit", str(limit)] if limit else []),
               *(["--max-turns", str(max_turns)] if max_turns and mode == "conversation"
                 else []), *extra]
        print("$ " + " ".join(cmd), flush=True)
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True)
        print(f"{mode}: sweep wall time {time.perf_counter() - t0:.0f} s\n", flush=True)


def find_runs(root: Path, modes: list[str], routers: list[str]) -> dict[str, Path]:
    """`<mode>/<router>` label → that router's sweep folder, for those present under root."""
    found = {f"{mode}/{router}": root / mode / router_dir_name(router)
             for mode in modes for router in routers}
    return {label: path for label, path in found.items() if path.is_dir()}


def render(runs: dict[str, Path]) -> str:
    """The by-turn table of every run side by side, a cached-share digest, and the
    per-conversation figures."""
    tables = load_many(list(runs.values()), list(runs))
    frame = turns.by_turn(tables.requests)  # the run label names mode and router
    if frame.empty:
        return "no successful agent request in " + ", ".join(map(str, runs.values()))
    parts = ["Agent and evaluator requests by turn (successful ones):", "",
             turns.by_turn_table(frame), "",
             "Cached prompt share and TTFT p50 (ms), turn 0 vs later turns:", "",
             table(_digest(tables.requests)), ""]
    convo = turns.conversations(tables.trials)
    if len(convo):
        parts += ["Per conversation:", "", table(convo), ""]
    if len(tables.issues):
        parts += [f"({len(tables.issues)} input problem(s); see `bankbench report`)"]
    return "\n".join(parts)


def _digest(requests: pd.DataFrame) -> pd.DataFrame:
    """Per source and level: cached share and TTFT p50 of turn 0 and of turns ≥ 1."""
    ok = requests[requests["measured"].astype(bool) & requests["ok"].astype(bool)]
    rows = []
    for (source, level), group in ok.groupby(["source", "level"], sort=False):
        row: dict[str, object] = {"run": source, "level": level}
        for name, part in (("turn 0", group[group["turn"] == 0]),
                           ("turns ≥ 1", group[group["turn"] > 0])):
            row[f"cached {name}"] = turns.cached_share(part)
            row[f"TTFT p50 {name}"] = part["ttft_ms"].median() if len(part) else None
            row[f"requests {name}"] = len(part)
        rows.append(row)
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sweeps", type=Path, help="read DIR/<mode>/r-<router>/ instead of running")
    ap.add_argument("--modes", default=",".join(MODES),
                    help="comma-separated (default %(default)s)")
    ap.add_argument("--routers", default=",".join(ROUTERS),
                    help="comma-separated (default %(default)s)")
    ap.add_argument("--levels", default="4", help="concurrency levels (default %(default)s)")
    ap.add_argument("--workers", type=int, default=4, help="mocker workers (default %(default)s)")
    ap.add_argument("--limit", type=int, default=None, help="first N sample scenarios only")
    ap.add_argument("--max-turns", type=int, default=None,
                    help="conversation mode's turn limit (default: the sweep's)")
    ap.add_argument("--out", type=Path, default=None,
                    help="where the sweeps go (default: a new temporary folder)")
    ap.add_argument("sweep_args", nargs="*",
                    help="more `bankbench sweep` options, after `--` (e.g. -- --attempts 2)")
    args = ap.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    routers = [r for r in args.routers.split(",") if r]
    root = args.sweeps
    if root is None:
        root = args.out or Path(tempfile.mkdtemp(prefix="conversation-routing-"))
        run_sweeps(root, modes, routers, args.levels, args.limit, args.max_turns,
                   args.workers, args.sweep_args)
    runs = find_runs(root, modes, routers)
    if not runs:
        print(f"conversation_routing: no <mode>/r-<router>/ sweep under {root}", file=sys.stderr)
        return 2
    print(render(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
