"""Client host cost per agent step: what one core and one host can drive with real trials.

Unlike client_capacity.py (the agent's own loop in-process, the bank replayed), this runs
whole trials as a sweep runs them: the real `harbor run` CLI, the real agent
(agents.banking:BankingAgent), LocalEnvironment (a sandbox per trial), the real bank program
and its service, the verifier, against the real Dynamo frontend with the mocker engine
(cpu-mocker) at a high speed-up so the server answers fast. Scripted replies (a mocker replay
trace) make every agent call the oracle's tools two per turn and then answer.

Measured, for one Harbor process at concurrency C:
- harness CPU: the Harbor process itself (Harbor's orchestration and the agent, which runs in
  it), sampled with psutil while it runs;
- sandbox + bank CPU: everything the Harbor process started (trial init, the bank service,
  `nsenter`/`prlimit`/`chroot`/bash per exec, the bank client per call, the verifier): the
  whole tree's CPU from os.wait4 minus the harness's own;
- wall outside LLM time per step: each trial's agent phase minus the e2e time of its LLM
  requests, over its steps; and the trial's fixed wall (environment start, verifier, Harbor's
  bookkeeping) per step;
- one LocalEnvironment alone: CPU and wall of a bare exec and of one bank call (client
  process plus the service's share, psutil on the service).

A step is one LLM request with the tool calls it asks for. From the per-step CPU c and the
per-step wall outside the LLM w, an agent whose LLM step takes L seconds uses c / (L + w) of
a core, so one core drives (L + w) / c agents; one Harbor process never uses more than one
core for the harness (one asyncio thread), and one host drives cores × (L + w) / c, which
needs at least (harness share of a host) Harbor processes — `bankbench sweep --shards`.

    .venv/bin/python benchmarks/client_host.py                  # c4, 14 tasks x 2, ~1 min
    .venv/bin/python benchmarks/client_host.py --levels 2,8 --attempts 1
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

SPEEDUP = 100.0
CALLS_PER_TURN = 2
LATENCIES_S = (0.5, 1.0, 2.0)
_ORACLE_CALL = re.compile(r"^/app/bank call (\S+) '(.*)'$", re.M)


def build(work: Path) -> tuple[Path, dict[str, list[str]]]:
    """The sample tasks and a replay script per scenario: the oracle's calls, then an answer."""
    from bankbench.serve.replay import tool_call_text
    from tasks.banking.build import build_tasks

    tasks = work / "tasks"
    build_tasks(source="sample", out=tasks, log=lambda line: None)
    sessions = {}
    for task in sorted(p.parent for p in tasks.glob("*/task.toml")):
        calls = [(n, json.loads(a)) for n, a in
                 _ORACLE_CALL.findall((task / "solution" / "solve.sh").read_text())]
        turns = ["\n".join(tool_call_text(n, a) for n, a in calls[i:i + CALLS_PER_TURN])
                 for i in range(0, len(calls), CALLS_PER_TURN)]
        sessions[f"host-{task.name}"] = [*turns, "All done: every request has been handled."]
    return tasks, sessions


@dataclass
class TreeSample:
    harness_s: float = 0.0  # the Harbor process's own user + system
    startup_s: float | None = None  # harness CPU when the first trial folder appeared
    service_s: float = 0.0  # bank services (bankd) seen alive, their last reading


def watch(pid: int, job: Path, sample: TreeSample, stop: threading.Event) -> None:
    """Sample the Harbor process (and live bank services) every 0.1 s until it ends."""
    root = psutil.Process(pid)
    services: dict[int, float] = {}
    while not stop.is_set():
        try:
            t = root.cpu_times()
            sample.harness_s = t.user + t.system
            if sample.startup_s is None and job.is_dir() and any(
                    p.is_dir() for p in job.iterdir()):
                sample.startup_s = sample.harness_s  # Harbor's CLI start and imports
            for child in root.children(recursive=True):
                try:
                    if any("bankd" in a for a in child.cmdline()):
                        c = child.cpu_times()
                        services[child.pid] = c.user + c.system
                except psutil.Error:
                    continue
        except psutil.Error:
            break
        sample.service_s = sum(services.values())
        time.sleep(0.1)


def run_harbor(tasks: Path, jobs: Path, level: int, attempts: int, base_url: str,
               model: str) -> tuple[Path, float, float, TreeSample]:
    """One `harbor run` as a sweep level runs it; (job dir, wall s, tree CPU s, sample)."""
    from bankbench.sweep.harbor_job import harbor_run_argv
    from contracts.sweep import SweepConfig

    config = SweepConfig(
        levels=[level], attempts=attempts, base_url=base_url, model=model,
        agent_kwargs={"nvext_annotations":
                      "output_replay_id:host-{scenario_id}:{request_index}"})
    name = f"c{level}"
    argv = harbor_run_argv(config, tasks_dir=tasks, sweep_dir=jobs, job_name=name,
                           level=level, base_url=base_url, model=model)
    env = {**os.environ, "HARBOR_TELEMETRY": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    sample, stop = TreeSample(), threading.Event()
    watcher = threading.Thread(target=watch, args=(proc.pid, jobs / name, sample, stop),
                               daemon=True)
    watcher.start()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    stop.set()
    watcher.join()
    if proc.returncode != 0:
        raise SystemExit(f"harbor exited {proc.returncode}")
    return jobs / name, wall, usage.ru_utime + usage.ru_stime, sample


def span_s(timing: dict | None) -> float:
    from datetime import datetime

    if not timing or not timing.get("started_at") or not timing.get("finished_at"):
        return 0.0
    a, b = (datetime.fromisoformat(timing[k]) for k in ("started_at", "finished_at"))
    return (b - a).total_seconds()


@dataclass
class JobFigures:
    trials: int
    steps: int
    bank_calls: int
    failed: int
    agent_wall_s: float  # Σ agent phase
    llm_s: float  # Σ request e2e
    fixed_wall_s: float  # Σ trial total minus agent phase


def read_job(job: Path) -> JobFigures:
    from harbor.models.trial.paths import TrialPaths

    from analysis.metrics.latency import timings
    from contracts.intents import INTENTS_FILE
    from contracts.llm_calls import LLM_CALLS_FILE, LLMCallRecord

    f = JobFigures(0, 0, 0, 0, 0.0, 0.0, 0.0)
    for result_path in sorted(job.glob("*/result.json")):
        result = json.loads(result_path.read_text())
        trial = result_path.parent
        f.trials += 1
        f.failed += result.get("exception_info") is not None
        agent = span_s(result.get("agent_execution"))
        f.agent_wall_s += agent
        f.fixed_wall_s += span_s(result) - agent
        calls = TrialPaths(trial).agent_dir / LLM_CALLS_FILE
        records = [LLMCallRecord.model_validate_json(line)
                   for line in (calls.read_text().splitlines() if calls.is_file() else [])]
        f.steps += len(records)
        f.llm_s += float(timings(records)["e2e_ms"].sum()) / 1e3  # the analysis's derivation
        intents = TrialPaths(trial).agent_dir / INTENTS_FILE
        f.bank_calls += len(intents.read_text().splitlines()) if intents.is_file() else 0
    return f


async def exec_costs(tasks: Path, samples: int) -> dict[str, float]:
    """CPU and wall of a bare exec and of a bank call in one LocalEnvironment."""
    from harbor.models.task.config import EnvironmentConfig
    from harbor.models.trial.paths import TrialPaths

    from agents.bank_bridge import call_command
    from environments.local import LocalEnvironment

    task = sorted(p.parent for p in tasks.glob("*/task.toml"))[0]
    name, args = _ORACLE_CALL.findall((task / "solution" / "solve.sh").read_text())[0]
    command = call_command(name, args, 1)
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as scratch:
        paths = TrialPaths(Path(scratch) / "trial")
        paths.mkdir()
        env = LocalEnvironment(
            environment_dir=task / "environment", environment_name=task.name,
            session_id="bench__host", trial_paths=paths, task_env_config=EnvironmentConfig(),
            state_dir=scratch)
        await env.start(force_build=False)
        try:
            services = [p for p in psutil.Process().children(recursive=True)
                        if any("bankd" in a for a in p.cmdline())]
            for label, cmd in (("exec", "true"), ("bank", command)):
                svc0 = sum(sum(p.cpu_times()[:2]) for p in services)
                ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                laps = []
                for _ in range(samples):
                    lap = time.perf_counter_ns()
                    result = await env.exec(cmd)
                    laps.append((time.perf_counter_ns() - lap) / 1e6)
                    assert result.return_code == 0, result.stderr
                ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                svc = sum(sum(p.cpu_times()[:2]) for p in services) - svc0
                cpu = (ru1.ru_utime + ru1.ru_stime) - (ru0.ru_utime + ru0.ru_stime)
                out[f"{label}_cpu_ms"] = (cpu + svc) * 1000 / samples
                out[f"{label}_service_ms"] = svc * 1000 / samples
                out[f"{label}_wall_ms"] = statistics.median(laps)
        finally:
            await env.stop(delete=True)
    return out


def report(level: int, wall: float, tree_cpu: float, sample: TreeSample, f: JobFigures,
           cores: int) -> None:
    steps = max(f.steps, 1)
    startup = sample.startup_s or 0.0  # paid once per Harbor process, not per step
    harness = (sample.harness_s - startup) / steps * 1000
    rest = (tree_cpu - sample.harness_s) / steps * 1000
    total = harness + rest
    inside = max(f.agent_wall_s - f.llm_s, 0.0) / steps * 1000
    fixed = f.fixed_wall_s / steps * 1000
    print(f"\nc{level}: {f.trials} trials ({f.failed} errored), {f.steps} steps, "
          f"{f.bank_calls} bank calls, {wall:.1f} s wall, load average "
          f"{os.getloadavg()[0]:.1f} on {cores} CPUs")
    print(f"  Harbor start-up (CLI, imports, job set-up) {startup * 1000:.0f} ms CPU, once")
    print(f"  per step: harness CPU {harness:.1f} ms | sandbox + bank CPU {rest:.1f} ms "
          f"(bank service {sample.service_s / steps * 1000:.1f} ms seen) | total {total:.1f} ms")
    print(f"  per step: wall outside LLM in the agent phase {inside:.1f} ms | trial fixed wall "
          f"(env start, verifier, Harbor) {fixed:.1f} ms | LLM e2e "
          f"{f.llm_s / steps * 1000:.1f} ms (mocker x{SPEEDUP:g})")
    print(f"  {'LLM s/step':>10} {'agents/core':>12} {'agents/harbor proc':>19} "
          f"{'agents/host':>12}")
    for latency in LATENCIES_S:
        cycle = latency * 1000 + inside + fixed
        per_core = cycle / total
        per_proc = min(cycle / harness, per_core * cores)
        print(f"  {latency:>10.1f} {per_core:>12.0f} {per_proc:>19.0f} {per_core * cores:>12.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--levels", default="4", help="Harbor concurrency levels (default: 4)")
    parser.add_argument("--attempts", type=int, default=2,
                        help="trials per task; the sample has 14 tasks (default: 2)")
    parser.add_argument("--exec-samples", type=int, default=20,
                        help="bare exec / bank call round trips timed (default: 20)")
    args = parser.parse_args()
    from bankbench.serve import api
    from bankbench.serve.replay import write_trace

    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory(prefix="client-host-") as scratch:
        work = Path(scratch)
        tasks, sessions = build(work)
        trace = write_trace(work / "trace.jsonl", sessions)
        costs = asyncio.run(exec_costs(tasks, args.exec_samples))
        print(f"one LocalEnvironment, {args.exec_samples} each: exec('true') "
              f"{costs['exec_cpu_ms']:.1f} ms CPU / {costs['exec_wall_ms']:.1f} ms wall; "
              f"bank call {costs['bank_cpu_ms']:.1f} ms CPU (service "
              f"{costs['bank_service_ms']:.1f}) / {costs['bank_wall_ms']:.1f} ms wall")
        with api.running("cpu-mocker", workers=1, state_dir=work / "server",
                         options={"speedup_ratio": SPEEDUP, "replay_trace": str(trace)}) as srv:
            for level in (int(x) for x in args.levels.split(",")):
                job, wall, cpu, sample = run_harbor(tasks, work / "jobs", level, args.attempts,
                                                    srv.base_url, srv.model)
                report(level, wall, cpu, sample, read_job(job), cores)


if __name__ == "__main__":
    sys.exit(main())
