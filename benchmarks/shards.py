"""One process vs shards at the same level, in one run: achieved vs configured concurrency.

Starts one cpu-mocker stack, then runs the same sweep level twice against it with the real
`bankbench sweep` (real harbor, agent, LocalEnvironment): once as one Harbor process, once as
`--shards N`. Prints each run's *Achieved concurrency* table (analysis/shards.py: Σ request e2e
over the wall-clock window, per shard and per level) and wall time.

    .venv/bin/python benchmarks/shards.py                          # level 8, 2 shards, ~4 min
    .venv/bin/python benchmarks/shards.py --level 16 --shards 4 --limit 14 --speedup 1
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run(args: argparse.Namespace, base_url: str, model: str, out: Path, name: str,
        shards: int) -> float:
    cmd = [sys.executable, "-m", "bankbench", "sweep", "--base-url", base_url, "--model", model,
           "--source", "sample", "--limit", str(args.limit), "--attempts", str(args.attempts),
           "--levels", str(args.level), "--shards", str(shards), "--out", str(out),
           "--name", name]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True,
                          env={**os.environ, "HARBOR_TELEMETRY": "0",
                               "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    if done.returncode != 0:
        raise SystemExit(done.stdout[-2000:] + done.stderr[-2000:])
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--level", type=int, default=8)
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--limit", type=int, default=8, help="sample scenarios (max 14)")
    parser.add_argument("--attempts", type=int, default=1)
    parser.add_argument("--speedup", type=float, default=1.0, help="mocker speed-up ratio")
    args = parser.parse_args()
    from analysis.shards import concurrency_table
    from analysis.tables import load
    from bankbench.serve import api

    with tempfile.TemporaryDirectory(prefix="shards-") as scratch:
        out = Path(scratch)
        with api.running("cpu-mocker", workers=1, state_dir=out / "server",
                         options={"speedup_ratio": args.speedup}) as srv:
            walls = {name: run(args, srv.base_url, srv.model, out, name, n)
                     for name, n in (("one", 1), ("sharded", args.shards))}
        print(f"level {args.level}, {args.limit} tasks x {args.attempts}, mocker x"
              f"{args.speedup:g}, {os.cpu_count()} CPUs, load average "
              f"{os.getloadavg()[0]:.1f}")
        for name, wall in walls.items():
            frame = concurrency_table(load(out / name))
            print(f"\n{name}: {wall:.1f} s wall")
            print(frame.drop(columns=["source"]).to_string(index=False,
                                                             float_format="{:.2f}".format))


if __name__ == "__main__":
    main()
