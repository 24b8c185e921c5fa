"""Capacity search on cpu-mocker: how long does `bankbench capacity` take to find a level, and
what does it find?

Real parts: `bankbench capacity` as a subprocess, the `harbor` CLI, BankingAgent,
LocalEnvironment, the Dynamo frontend with the mocker engine (cpu-mocker) at a high speed-up,
with Dynamo's request trace on. The mocker's replies are scripted through a response-replay
trace (every scenario: two tool calls, then an answer), so the agent makes real decisions the
consistency check can compare. With `--degrade-above K` the requests go through the
FAULT-INJECTING TEST PROXY (tests/support/fault_proxy.py), which degrades the reply of every
request that was in flight together with more than K requests (an unparsable, cut-off tool
call and finish_reason=length): the consistency side of the frontier. With `--diverge-above K`
the proxy changes decisions instead of breaking them (tests/support/scripted_decisions.py):
one agent session in four switched to another second tool at every level (noise), and every
session that starts among more than K requests in flight to a third (divergence growing
above that load).

    .venv/bin/python benchmarks/capacity.py                          # 6 tasks x 2 attempts
    .venv/bin/python benchmarks/capacity.py --degrade-above 3        # decisions break above 3
    .venv/bin/python benchmarks/capacity.py --speedup 1 --workers 2 --diverge-above 2 \
        --max-level 8 --slo error_rate=0.5                            # decisions drift above 2

Prints the search's own output (steps, tables, headline), then per step its level, phase,
verdict and wall time from capacity.json, and the total wall time (perf_counter_ns around the
whole command: tasks built, every level, report). The sweep directory is kept (--out) with its
report.md, capacity.png and plots/consistency_vs_concurrency.png.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bankbench.serve import api, replay  # noqa: E402
from tests.support.fault_proxy import FaultSchedule, in_thread  # noqa: E402
from tests.support.scripted_decisions import noise, scripts  # noqa: E402

PREFIX = "capbench-"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=6, help="sample scenarios")
    ap.add_argument("--attempts", type=int, default=2, help="Harbor attempts per task")
    ap.add_argument("--speedup", type=float, default=50.0, help="mocker speedup_ratio")
    ap.add_argument("--slo", action="append", default=None,
                    help="bounds (default: ttft_p90_ms=300, error_rate=0.01)")
    ap.add_argument("--degrade-above", type=int, default=None,
                    help="degrade replies of requests that met more than K in flight")
    ap.add_argument("--diverge-above", type=int, default=None,
                    help="switch one session in four to another tool at every level, and "
                         "every session starting among more than K in flight to a third")
    ap.add_argument("--workers", type=int, default=1, help="mocker workers")
    ap.add_argument("--max-level", type=int, default=64)
    # Six scenarios cannot certify the default 10-point margin (docs/capacity.md): a wide one,
    # so the demonstration shows the decision check at work rather than its sample size.
    ap.add_argument("--max-divergence", type=float, default=0.35)
    ap.add_argument("--alpha", type=float, default=0.5)
    ap.add_argument("--out", default="/tmp/bankbench-capacity-bench")
    args = ap.parse_args()

    name = time.strftime("capacity-%Y%m%d-%H%M%S", time.gmtime())
    slos = args.slo or ["ttft_p90_ms=300", "error_rate=0.01"]
    work = Path(tempfile.mkdtemp(prefix="capbench-"))
    trace = replay.write_trace(work / "trace.jsonl", scripts(args.limit, usual=PREFIX))
    options = {"speedup_ratio": args.speedup, "replay_trace": str(trace),
               "request_trace": True}
    print(f"starting cpu-mocker (speedup {args.speedup:g}, scripted tool calls) ...", flush=True)
    # The stack's state in <sweep>/server: the sweep copies each level's request-trace lines
    # from there, as it does for a stack it starts itself.
    state_dir = Path(args.out) / name / "server"
    with ExitStack() as stack:
        state = stack.enter_context(api.running("cpu-mocker", workers=args.workers,
                                                state_dir=state_dir, options=options))
        proxy = None
        if args.degrade_above is not None or args.diverge_above is not None:
            rescript = (noise(args.diverge_above, usual=PREFIX)
                        if args.diverge_above is not None else None)
            proxy = stack.enter_context(in_thread(state.base_url, FaultSchedule(
                degrade_above=args.degrade_above, rescript=rescript)))
        base_url = proxy.base_url if proxy else state.base_url
        cmd = [sys.executable, "-m", "bankbench", "capacity", "--base-url", base_url,
               "--model", state.model, "--source", "sample", "--limit", str(args.limit),
               "--attempts", str(args.attempts), "--max-level", str(args.max_level),
               "--max-divergence", str(args.max_divergence), "--alpha", str(args.alpha),
               "--max-looks", "1",
               "--ak", f"nvext_annotations=output_replay_id:{PREFIX}{{scenario_id}}:"
               "{request_index}", "--out", args.out, "--name", name]
        for slo in slos:
            cmd += ["--slo", slo]
        print("$", " ".join(cmd[1:]), flush=True)
        t0 = time.perf_counter_ns()
        done = subprocess.run(cmd, cwd=REPO, env={**os.environ, "HARBOR_TELEMETRY": "0"})
        wall_s = (time.perf_counter_ns() - t0) / 1e9
        if proxy is not None:
            print(f"fault proxy degraded {proxy.degraded} replies, switched "
                  f"{proxy.rescripted} sessions' scripts", flush=True)
    sweep = Path(args.out) / name
    record = json.loads((sweep / "capacity.json").read_text())
    print(f"\n{'level':>5} {'phase':>8} {'verdict':>8} {'divergence':>10} {'wall s':>8}")
    for step in record["steps"]:
        divergence = ((step.get("decisions") or {}).get("divergence") or {}).get("mean")
        shown = "n/a" if divergence is None else f"{divergence:.3f}"
        print(f"{step['level']:>5} {step['phase']:>8} "
              f"{'pass' if step['passed'] else 'FAIL':>8} {shown:>10} {step['seconds']:>8.1f}")
    print(f"\ncapacity {record['capacity']} (lowest failing {record['lowest_failing']}, "
          f"inconclusive {record.get('inconclusive')}, limiting {record.get('limiting')}, "
          f"stopped: {record['stopped_because']}); {len(record['steps'])} levels; "
          f"search wall time {wall_s:.0f} s on {os.cpu_count()} CPUs; sweep dir {sweep}")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
