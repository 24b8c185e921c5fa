"""Capacity search on cpu-mocker: how long does `bankbench capacity` take to find a level, and
what does it find?

Real parts: `bankbench capacity` as a subprocess, the `harbor` CLI, BankingAgent,
LocalEnvironment, the Dynamo frontend with the mocker engine (cpu-mocker) at a high speed-up.

    .venv/bin/python benchmarks/capacity.py                          # 6 tasks x 2 attempts
    .venv/bin/python benchmarks/capacity.py --limit 4 --attempts 1 --speedup 100

Prints the search's own output (steps, level table, headline), then per step its level, phase,
verdict and wall time from capacity.json, and the total wall time (perf_counter_ns around the
whole command: tasks built, server started, every level, report). The sweep directory is kept
(--out) so its report, capacity.png and plots/consistency_vs_concurrency.png can be looked at.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=6, help="sample scenarios")
    ap.add_argument("--attempts", type=int, default=2, help="Harbor attempts per task")
    ap.add_argument("--speedup", type=float, default=50.0, help="mocker speedup_ratio")
    ap.add_argument("--slo", action="append", default=None,
                    help="bounds (default: ttft_p90_ms=300, error_rate=0.01)")
    ap.add_argument("--max-level", type=int, default=64)
    ap.add_argument("--out", default="/tmp/bankbench-capacity-bench")
    args = ap.parse_args()

    name = time.strftime("capacity-%Y%m%d-%H%M%S", time.gmtime())
    slos = args.slo or ["ttft_p90_ms=300", "error_rate=0.01"]
    cmd = [sys.executable, "-m", "bankbench", "capacity", "--profile", "cpu-mocker",
           "--set", f"speedup_ratio={args.speedup:g}", "--set", "request_trace=true",
           "--source", "sample",
           "--limit", str(args.limit), "--attempts", str(args.attempts),
           "--max-level", str(args.max_level), "--out", args.out, "--name", name]
    for slo in slos:
        cmd += ["--slo", slo]
    print("$", " ".join(cmd[1:]), flush=True)
    t0 = time.perf_counter_ns()
    done = subprocess.run(cmd, cwd=REPO, env={**os.environ, "HARBOR_TELEMETRY": "0"})
    wall_s = (time.perf_counter_ns() - t0) / 1e9
    sweep = Path(args.out) / name
    record = json.loads((sweep / "capacity.json").read_text())
    print(f"\n{'level':>5} {'phase':>8} {'verdict':>8} {'wall s':>8}")
    for step in record["steps"]:
        print(f"{step['level']:>5} {step['phase']:>8} "
              f"{'pass' if step['passed'] else 'FAIL':>8} {step['seconds']:>8.1f}")
    print(f"\ncapacity {record['capacity']} (lowest failing {record['lowest_failing']}, "
          f"stopped: {record['stopped_because']}); {len(record['steps'])} levels; "
          f"total wall time {wall_s:.0f} s on {os.cpu_count()} CPUs; sweep dir {sweep}")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
