"""What a trial costs in LocalEnvironment, phase by phase, at a few concurrency levels.

Runs Harbor's oracle agent (no LLM) over the banking tasks with the real `harbor run` CLI,
then reads each trial's result.json for Harbor's own per-phase timings: environment start,
agent setup, agent run, verifier, and the rest (Harbor's bookkeeping: log and artifact
transfer, stop). Also times a bare `exec("true")` round trip through the environment API.

    .venv/bin/python benchmarks/env_overhead.py                 # sample tasks x2, levels 1,4
    .venv/bin/python benchmarks/env_overhead.py --tasks DIR --attempts 1 --levels 1,2,8
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harbor.models.trial.result import TimingInfo, TrialResult

BIN = Path(sys.executable).parent
PHASES = ("environment_setup", "agent_setup", "agent_execution", "verifier")


def seconds(timing: TimingInfo | None) -> float:
    if timing is None or timing.started_at is None or timing.finished_at is None:
        return 0.0
    return (timing.finished_at - timing.started_at).total_seconds()


def quantiles(values: list[float]) -> tuple[float, float]:
    """(median, p90) in milliseconds."""
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    return statistics.median(ordered) * 1000, p90 * 1000


def build_sample_tasks(out: Path) -> Path:
    command = [str(BIN / "bankbench"), "tasks", "build", "--source", "sample", "--out", str(out)]
    subprocess.run(command, check=True, capture_output=True, text=True)
    return out


def run_level(tasks: Path, jobs: Path, env: str, level: int, attempts: int) -> tuple[float, Path]:
    name = f"c{level}"
    command = [
        str(BIN / "harbor"), "run", "--path", str(tasks), "--agent", "oracle", "--env", env,
        "--jobs-dir", str(jobs), "--job-name", name, "-n", str(level), "-k", str(attempts), "-q",
    ]
    environ = {**os.environ, "HARBOR_TELEMETRY": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    started = time.perf_counter_ns()
    subprocess.run(command, check=True, capture_output=True, text=True, env=environ)
    return (time.perf_counter_ns() - started) / 1e9, jobs / name


def summarize(job_dir: Path, level: int, job_wall_s: float) -> None:
    trials = [
        TrialResult.model_validate_json(path.read_text())
        for path in sorted(job_dir.glob("*/result.json"))
    ]
    failed = [t.trial_name for t in trials if t.exception_info is not None]
    rewards = [t.verifier_result.rewards.get("tsq") for t in trials
               if t.verifier_result and t.verifier_result.rewards]
    columns: dict[str, list[float]] = {phase: [] for phase in PHASES}
    columns["other"], columns["trial total"] = [], []
    for trial in trials:
        total = seconds(TimingInfo(started_at=trial.started_at, finished_at=trial.finished_at))
        parts = {phase: seconds(getattr(trial, phase)) for phase in PHASES}
        for phase, value in parts.items():
            columns[phase].append(value)
        columns["other"].append(max(0.0, total - sum(parts.values())))
        columns["trial total"].append(total)
    print(f"\nconcurrency {level}: {len(trials)} trials in {job_wall_s:.1f} s wall "
          f"({len(trials) / job_wall_s:.2f} trials/s incl. CLI start); errored {len(failed)}; "
          f"tsq 1.0 on {sum(r == 1.0 for r in rewards)}/{len(trials)}")
    print(f"  {'phase':<18}{'median ms':>11}{'p90 ms':>10}")
    for phase, values in columns.items():
        median, p90 = quantiles(values)
        print(f"  {phase:<18}{median:>11.1f}{p90:>10.1f}")


async def exec_round_trip(tasks: Path, samples: int) -> None:
    """Latency of env.exec('true'): namespace, mounts, chroot and bash, nothing else."""
    from harbor.models.task.config import EnvironmentConfig
    from harbor.models.trial.paths import TrialPaths

    from environments.local import LocalEnvironment

    task_dir = sorted(p.parent for p in tasks.glob("*/task.toml"))[0]
    with tempfile.TemporaryDirectory() as scratch:
        paths = TrialPaths(Path(scratch) / "trial")
        paths.mkdir()
        env = LocalEnvironment(
            environment_dir=task_dir / "environment", environment_name=task_dir.name,
            session_id="bench__env", trial_paths=paths, task_env_config=EnvironmentConfig(),
            state_dir=scratch,
        )
        started = time.perf_counter_ns()
        await env.start(force_build=False)
        start_ms = (time.perf_counter_ns() - started) / 1e6
        laps = []
        for _ in range(samples):
            lap = time.perf_counter_ns()
            await env.exec("true")
            laps.append((time.perf_counter_ns() - lap) / 1e9)
        await env.stop(delete=True)
    median, p90 = quantiles(laps)
    print(f"\nLocalEnvironment API: start {start_ms:.1f} ms; exec('true') x{samples}: "
          f"median {median:.1f} ms, p90 {p90:.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=Path, help="task dirs (default: build the sample)")
    parser.add_argument("--levels", default="1,4", help="concurrency levels (default: 1,4)")
    parser.add_argument("--attempts", type=int, default=2,
                        help="trials per task; the sample has 14 tasks (default: 2)")
    parser.add_argument("--env", default="environments.local:LocalEnvironment",
                        help="Harbor --env value (default: the local environment)")
    parser.add_argument("--exec-samples", type=int, default=50,
                        help="bare exec round trips to time; 0 skips (default: 50)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="env-overhead-") as scratch:
        tasks = args.tasks or build_sample_tasks(Path(scratch) / "tasks")
        n_tasks = len(list(tasks.glob("*/task.toml")))
        print(f"{n_tasks} tasks x {args.attempts} attempts, env {args.env}, "
              f"{os.cpu_count()} CPUs")
        for level in (int(x) for x in args.levels.split(",")):
            wall, job_dir = run_level(tasks, Path(scratch) / "jobs", args.env, level,
                                      args.attempts)
            summarize(job_dir, level, wall)
        if args.exec_samples:
            asyncio.run(exec_round_trip(tasks, args.exec_samples))


if __name__ == "__main__":
    main()
