"""Client capacity: how many concurrent trials one agent process drives before its own CPU
becomes the limit.

The real Dynamo frontend and mocker workers (cpu-mocker) run with a high --speedup-ratio so the
server answers fast. At each configured level C, C simulated trials run at once, each in a closed
loop: when one ends the next starts, for a fixed number of seconds. A simulated trial is the
agent's own `Episode` (agents/episode.py: ReAct loop, StreamingClient, call log, status file,
trajectory) over one of the sample banking tasks: the customer's instruction, the 20 bank tool
schemas on every request, and scripted model outputs (a mocker replay trace) that call the
oracle's tools two per turn and then answer, so 3 to 4 streamed requests per trial.

Achieved concurrency is the analysis definition (analysis/metrics/throughput.py: Σ request
e2e / measured window, i.e. the time-weighted mean of LLM requests in flight) applied to the
call records the client produced, over the closed-loop seconds ("achvd", the one judged); the
analysis's own window (first start to last end, so including the drain after the deadline) is
shown as "whole". Time a trial spends outside its requests (the client's own work, waiting
for the event loop, bank calls) is what keeps achieved below configured. Client CPU is this
process's getrusage over the level's wall time; server CPU is the frontend and mocker process
trees (psutil); "other" is the rest of the machine's busy time (on a shared VM, someone else).
Event-loop lag (how late a 10 ms sleep wakes) shows a saturated client directly.

What a simulated trial includes: everything the agent does on the host per trial (its own
OpenAI client and connection, request building, stream parsing, records, files). Bank calls:
`--bank replay` (default) answers each `bank tools` / `bank call` in-process with the reply
the real bank program gave at set-up; `--bank exec` runs the real bank program (python, via
bash) per call, as a host subprocess, its CPU shown as "bank". Not included: LocalEnvironment's
namespace/chroot per exec, environment start/stop, the verifier and Harbor's orchestration
(benchmarks/env_overhead.py measures those per trial).

    .venv/bin/python benchmarks/client_capacity.py                  # levels 1..256, ~4 min
    .venv/bin/python benchmarks/client_capacity.py --quick          # 1, 32, 128; ~1 min
    .venv/bin/python benchmarks/client_capacity.py --levels 64,128 --seconds 20 --bank exec
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import resource
import shlex
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import psutil

from agents.attempt import TrialIdentity
from agents.bank_bridge import BANK, call_command
from agents.banking import AGENT_NAME, AGENT_VERSION
from agents.episode import Episode
from agents.options import BankingAgentOptions
from agents.trajectory import TrajectoryBuilder
from analysis.metrics.latency import timings
from analysis.metrics.throughput import (
    ACHIEVED_CONCURRENCY,
    REQUEST_THROUGHPUT,
    TRIAL_CONCURRENCY,
    throughput_metrics,
)

CALLS_PER_TURN = 2
CLIENT_LIMIT = 0.90  # one asyncio thread: near a full core, the client is the bottleneck
TARGET = 0.95
SELF, CHILDREN = resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN
_ORACLE_CALL = re.compile(r"^/app/bank call (\S+) '(.*)'$", re.M)


@dataclass
class Scenario:
    name: str
    task_dir: Path
    instruction: str
    tools_text: str
    calls: list[tuple[str, dict]]
    replies: dict[str, str] = field(default_factory=dict)  # tool name -> the bank's stdout


@dataclass
class Exec:
    return_code: int
    stdout: str
    stderr: str = ""


class ExecBank:
    """The real bank program as a host subprocess per call (bash -c, as environments run it)."""

    def __init__(self, scenario: Scenario, intents: Path) -> None:
        self.bank = scenario.task_dir / "environment" / "bank"
        self.env = {**os.environ, "BANK_DIR": str(self.bank.parent), "BANK_INTENTS": str(intents)}

    async def exec(self, command: str, cwd: str | None = None, env: dict | None = None,
                   timeout_sec: int | None = None) -> Exec:
        command = command.replace(BANK, f"{shlex.quote(sys.executable)} "
                                        f"{shlex.quote(str(self.bank))}", 1)
        proc = await asyncio.create_subprocess_exec(
            "bash", "-c", command, env=self.env, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, stdin=asyncio.subprocess.DEVNULL)
        out, err = await proc.communicate()
        return Exec(proc.returncode or 0, out.decode(), err.decode())


class ReplayBank:
    """Answers with the replies the real bank gave at set-up: client cost only."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario

    async def exec(self, command: str, cwd: str | None = None, env: dict | None = None,
                   timeout_sec: int | None = None) -> Exec:
        if command == f"{BANK} tools":
            return Exec(0, self.scenario.tools_text)
        # `/app/bank call <tool> '<args>' --attempt N`: the tool name is a plain word; each
        # scenario calls a tool once, so its name finds the reply (the server may re-space
        # the arguments' JSON).
        reply = self.scenario.replies.get(command.split(" ", 3)[2])
        return Exec(0, reply) if reply is not None else Exec(2, "", "not scripted")


def load_scenarios(work: Path) -> list[Scenario]:
    """The sample banking tasks, with each oracle call's real bank reply recorded once."""
    from tasks.banking.build import build_tasks

    build_tasks(source="sample", out=work / "tasks", log=lambda line: None)
    scenarios = []
    for task in sorted(p.parent for p in (work / "tasks").glob("*/task.toml")):
        calls = [(n, json.loads(a)) for n, a in
                 _ORACLE_CALL.findall((task / "solution" / "solve.sh").read_text())]
        scenarios.append(Scenario(task.name, task, (task / "instruction.md").read_text(),
                                  (task / "environment" / "tools.json").read_text(), calls))

    async def record_replies() -> None:
        for s in scenarios:
            bank = ExecBank(s, work / "intents" / f"{s.name}.jsonl")
            for name, args in s.calls:
                command = call_command(name, json.dumps(args), 1)
                s.replies[name] = (await bank.exec(command)).stdout

    asyncio.run(record_replies())
    return scenarios


def scripted_outputs(scenarios: list[Scenario]) -> dict[str, list[str]]:
    """Replay-trace turns per scenario: the oracle's calls two per turn, then a short answer."""
    from bankbench.serve.replay import tool_call_text

    sessions = {}
    for s in scenarios:
        turns = ["\n".join(tool_call_text(n, a) for n, a in s.calls[i:i + CALLS_PER_TURN])
                 for i in range(0, len(s.calls), CALLS_PER_TURN)]
        sessions[f"cap-{s.name}"] = [*turns, "All done: every request above has been handled."]
    return sessions


@dataclass
class Trial:
    records: list
    start_ns: int
    end_ns: int
    status: str


async def run_trial(scenario: Scenario, trial: str, opts: BankingAgentOptions, model: str,
                    logs_root: Path, bank_mode: str) -> Trial:
    """One trial exactly as BankingAgent.run does it, minus Harbor and the environment."""
    from harbor.models.agent.context import AgentContext
    from harbor.models.trial.paths import TrialPaths

    logs = TrialPaths(logs_root / trial).agent_dir
    ident = TrialIdentity(trial, scenario.name, trial)
    trace = TrajectoryBuilder(AGENT_NAME, AGENT_VERSION, model, session_id=trial,
                              extra={"options": opts.model_dump(mode="json")})
    bank = (ExecBank(scenario, logs / "intents.jsonl") if bank_mode == "exec"
            else ReplayBank(scenario))
    start = time.time_ns()
    episode = Episode(opts, model, logs, ident, trace, AgentContext())
    outcome = await episode.run(scenario.instruction, bank)
    return Trial(episode.log.records, start, time.time_ns(), outcome.status.status)


def tree_cpu_s(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        try:
            root = psutil.Process(pid)
            for p in [root, *root.children(recursive=True)]:
                t = p.cpu_times()
                total += t.user + t.system
        except psutil.NoSuchProcess:
            continue
    return total


def machine_busy_s() -> float:
    t = psutil.cpu_times()
    return sum(t) - t.idle - getattr(t, "iowait", 0.0)


async def drive_level(level: int, seconds: float, scenarios: list[Scenario],
                      opts: BankingAgentOptions, model: str, logs_root: Path,
                      bank_mode: str) -> tuple[list[Trial], list[float]]:
    deadline = time.perf_counter() + seconds
    trials: list[Trial] = []
    lags: list[float] = []
    stop = asyncio.Event()

    async def sample_lag() -> None:
        while not stop.is_set():
            t0 = time.perf_counter()
            await asyncio.sleep(0.01)
            lags.append((time.perf_counter() - t0 - 0.01) * 1000)

    async def worker(w: int) -> None:
        n = 0
        while time.perf_counter() < deadline:
            scenario = scenarios[(w + n * level) % len(scenarios)]
            trials.append(await run_trial(scenario, f"{scenario.name}__c{level}w{w}n{n}", opts,
                                          model, logs_root, bank_mode))
            n += 1

    sampler = asyncio.create_task(sample_lag())
    await asyncio.gather(*(worker(w) for w in range(level)))
    stop.set()
    await sampler
    return trials, lags


def in_flight_mean(records: list, e2e_ms: list, start_ns: int, end_ns: int) -> float:
    """The analysis's achieved concurrency (Σ e2e / window) over [start, end) only, each
    request clipped to it: the part of the level where every trial slot is live, before the
    last trials drain out after the deadline."""
    busy = 0
    for r, e2e in zip(records, e2e_ms, strict=True):
        if e2e == e2e:  # not NaN
            end = r.start_unix_ns + round(e2e * 1e6)
            busy += max(0, min(end, end_ns) - max(r.start_unix_ns, start_ns))
    return busy / (end_ns - start_ns)


def measure(level: int, args: argparse.Namespace, scenarios: list[Scenario],
            opts: BankingAgentOptions, model: str, server_pids: list[int], work: Path) -> dict:
    logs_root = work / f"c{level}"
    ru0, ch0 = resource.getrusage(SELF), resource.getrusage(CHILDREN)
    srv0, busy0, t0 = tree_cpu_s(server_pids), machine_busy_s(), time.perf_counter()
    steady = (time.time_ns(), time.time_ns() + int(args.seconds * 1e9))
    trials, lags = asyncio.run(drive_level(level, args.seconds, scenarios, opts, model,
                                           logs_root, args.bank))
    wall = time.perf_counter() - t0
    ru1, ch1 = resource.getrusage(SELF), resource.getrusage(CHILDREN)
    server_s, busy_s = tree_cpu_s(server_pids) - srv0, machine_busy_s() - busy0
    shutil.rmtree(logs_root, ignore_errors=True)
    client_s = (ru1.ru_utime + ru1.ru_stime) - (ru0.ru_utime + ru0.ru_stime)
    bank_s = (ch1.ru_utime + ch1.ru_stime) - (ch0.ru_utime + ch0.ru_stime)

    records = [r for t in trials for r in t.records]
    shown = timings(records)  # the analysis's own derivation
    requests = pd.DataFrame({
        "start_unix_ns": [r.start_unix_ns for r in records],
        "e2e_ms": shown["e2e_ms"],
        "ok": np.array([r.error is None for r in records], dtype=bool) & shown["e2e_ms"].notna(),
        "completion_tokens": [r.completion_tokens for r in records],
    })
    requests["end_unix_ns"] = requests["start_unix_ns"] + (requests["e2e_ms"] * 1e6).round()
    trial_frame = pd.DataFrame({
        "started_at": pd.to_datetime([t.start_ns for t in trials], unit="ns"),
        "finished_at": pd.to_datetime([t.end_ns for t in trials], unit="ns"),
    })
    tp = throughput_metrics(requests, trial_frame, float(level))
    ttft = [t for r, t in zip(records, shown["ttft_ms"], strict=True)
            if t == t and r.error is None]
    n_ok = int(requests["ok"].sum())
    # Wall time a trial spends outside its LLM requests, per request: the client's own work
    # (and the bank's) plus waiting for the event loop.
    gap_ms = (sum((t.end_ns - t.start_ns) / 1e6 for t in trials)
              - float(shown["e2e_ms"].sum())) / max(1, len(records))
    return {
        "configured": level, "trials": len(trials), "requests": len(records),
        "errors": len(records) - n_ok,
        "not_ok_trials": sum(1 for t in trials if t.status != "ok"),
        "achieved": in_flight_mean(records, shown["e2e_ms"].tolist(), *steady),
        "achieved_whole": tp[ACHIEVED_CONCURRENCY.key],
        "achieved_trials": tp[TRIAL_CONCURRENCY.key],
        "req_per_s": tp[REQUEST_THROUGHPUT.key],
        "wall_s": wall,
        "client_cpu": client_s / wall, "bank_cpu": bank_s / wall, "server_cpu": server_s / wall,
        "other_cpu": max(0.0, busy_s - client_s - bank_s - server_s) / wall,
        "client_cpu_ms_per_request": 1000 * client_s / max(1, len(records)),
        "gap_ms_per_request": gap_ms,
        "ttft_p50_ms": statistics.median(ttft) if ttft else float("nan"),
        "loop_lag_p99_ms": (statistics.quantiles(lags, n=100)[98] if len(lags) > 1
                            else float("nan")),
    }


def meets(row: dict) -> bool:
    return (row["achieved"] >= TARGET * row["configured"] and row["client_cpu"] < CLIENT_LIMIT
            and row["errors"] == 0)


def print_tables(rows: list[dict], args: argparse.Namespace) -> None:
    print(f"\n{os.cpu_count()} CPUs, cpu-mocker {args.workers} workers speedup "
          f"{args.speedup:g}, {args.seconds:g} s closed loop per level, bank {args.bank}; "
          "CPU in % of one core")
    print(f"{'conf':>5} {'achvd':>7} {'ratio':>6} {'whole':>6} {'client%':>8} {'server%':>8} "
          f"{'bank%':>6} {'other%':>7} {'req/s':>7} {'TTFT p50':>9} {'lag p99':>8} "
          f"{'trials':>7} {'err':>4}")
    for r in rows:
        print(f"{r['configured']:>5} {r['achieved']:>7.1f} {r['achieved'] / r['configured']:>6.3f}"
              f" {r['achieved_whole']:>6.1f}"
              f" {100 * r['client_cpu']:>8.0f} {100 * r['server_cpu']:>8.0f}"
              f" {100 * r['bank_cpu']:>6.0f} {100 * r['other_cpu']:>7.0f}"
              f" {r['req_per_s']:>7.1f} {r['ttft_p50_ms']:>8.1f}ms {r['loop_lag_p99_ms']:>6.1f}ms"
              f" {r['trials']:>7} {r['errors']:>4}")
    ok = [r["configured"] for r in rows if meets(r)]
    missed = [r["configured"] for r in rows if not meets(r)]
    print(f"highest level with achieved ≥ {TARGET:.0%} of configured, client CPU < "
          f"{CLIENT_LIMIT:.0%} and no errors: {max(ok) if ok else 'none'} (goal ≥ 128); "
          f"levels missing it: {missed or 'none'}")
    print("\ncost growth: client CPU per request should stay flat (total cost linear in load)")
    print(f"{'conf':>5} {'CPU ms/req':>11} {'step ×':>7} {'gap ms/req':>11}")
    previous = None
    for r in rows:
        cost = r["client_cpu_ms_per_request"]
        step = f"{cost / previous:>7.2f}" if previous else f"{'':>7}"
        print(f"{r['configured']:>5} {cost:>11.2f} {step} {r['gap_ms_per_request']:>11.1f}")
        previous = cost
    worst = max((b["client_cpu_ms_per_request"] / a["client_cpu_ms_per_request"]
                 for a, b in zip(rows, rows[1:], strict=False)), default=1.0)
    print(f"worst step: per-request cost × {worst:.2f} "
          f"({'linear or better' if worst <= 1.15 else 'WORSE than linear'}; 15 % noise allowed)")
    if len(rows) > 1:
        overall = rows[-1]["client_cpu_ms_per_request"] / rows[0]["client_cpu_ms_per_request"]
        print(f"overall: per-request cost at {rows[-1]['configured']} / at "
              f"{rows[0]['configured']} = × {overall:.2f} (a step above 1 that later steps undo "
              "is noise from other load, not growth)")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--levels", default="1,8,32,64,128,192,256",
                   help="comma-separated concurrent trials (default 1,8,32,64,128,192,256)")
    p.add_argument("--seconds", type=float, default=20.0, help="closed-loop time per level")
    p.add_argument("--quick", action="store_true", help="levels 1,32,128 for 8 s each")
    p.add_argument("--speedup", type=float, default=100.0, help="mocker --speedup-ratio")
    p.add_argument("--workers", type=int, default=2, help="mocker workers")
    p.add_argument("--bank", choices=("replay", "exec"), default="replay",
                   help="replay: recorded bank replies in-process; exec: the bank program "
                   "per tool call as a subprocess")
    p.add_argument("--json", type=Path, help="also write the rows here")
    args = p.parse_args()
    if args.quick:
        args.levels, args.seconds = "1,32,128", 8.0
    levels = [int(x) for x in args.levels.split(",")]

    from bankbench.serve import api
    from bankbench.serve.replay import write_trace

    work = Path(tempfile.mkdtemp(prefix="bankbench-capacity-"))
    rows: list[dict] = []
    try:
        scenarios = load_scenarios(work)
        trace = write_trace(work / "trace.jsonl", scripted_outputs(scenarios))
        print(f"starting cpu-mocker ({args.workers} workers, speedup {args.speedup:g}) …",
              flush=True)
        state = api.up("cpu-mocker", workers=args.workers, state_dir=work / "server",
                       options={"speedup_ratio": args.speedup, "replay_trace": str(trace)})
        try:
            pids = [c.pid for c in state.components if c.pid]
            opts = BankingAgentOptions(
                base_url=state.base_url, model=state.model,
                nvext_annotations=["output_replay_id:cap-{scenario_id}:{request_index}"])
            measure(1, argparse.Namespace(**{**vars(args), "seconds": 1.0}), scenarios, opts,
                    state.model, pids, work)  # warm-up: imports, first connections
            for level in levels:
                row = measure(level, args, scenarios, opts, state.model, pids, work)
                rows.append(row)
                print(json.dumps({k: round(v, 3) if isinstance(v, float) else v
                                  for k, v in row.items()}), flush=True)
        finally:
            api.down(state)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print_tables(rows, args)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
