"""Interruption and resume under CPU load: the suite's interruption tests run again and again
beside a process that keeps every core busy, and the pass rate is printed.

The tests are the suite's own (real `bankbench sweep` subprocesses, the real harbor CLI,
LocalEnvironment, the real Dynamo frontend with the mocker engine):
- tests/reliability/test_sweep_interruption.py::test_sigint_stops_cleanly_and_says_how_to_resume
  (Ctrl-C mid-sweep: exit 130, the level recorded `interrupted`, the resume completes it);
- tests/bankbench/sweep/test_shards_e2e.py::
  test_a_killed_shard_loses_only_its_unfinished_trials_and_resume_completes_them
  (one shard's Harbor SIGKILLed mid-level: its job files may be left empty or cut short; the
  resume sets them aside and completes the level).

    .venv/bin/python benchmarks/interruption_under_load.py [--rounds 20] [--hogs N]

A round runs each test once (pytest, no parallel workers); the hog is N processes spinning
(default: one per core) for the whole benchmark. Prints one line per round and, at the end,
`<test>: passed P of R beside N busy processes` per test. Under load a round takes minutes:
20 rounds of both is hours on 2 cores.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = {
    "sigint": "tests/reliability/test_sweep_interruption.py::"
              "test_sigint_stops_cleanly_and_says_how_to_resume",
    "killed-shard": "tests/bankbench/sweep/test_shards_e2e.py::"
                    "test_a_killed_shard_loses_only_its_unfinished_trials_and_resume_completes_them",
}


def _spin() -> None:
    while True:
        pass


def run_once(test: str) -> tuple[bool, float, str]:
    t0 = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", test, "--tier", "all", "-n", "0", "-q", "-x",
         "-p", "no:cacheprovider"], cwd=ROOT, capture_output=True, text=True, timeout=3600,
        env={**os.environ, "HARBOR_TELEMETRY": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    last = (done.stdout.strip().splitlines() or [""])[-1]
    return done.returncode == 0, time.monotonic() - t0, last


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--hogs", type=int, default=os.cpu_count() or 2,
                        help="busy processes beside the tests (default: one per core)")
    parser.add_argument("--only", choices=sorted(TESTS), action="append",
                        help="run only this test (repeatable)")
    args = parser.parse_args()
    chosen = {k: v for k, v in TESTS.items() if not args.only or k in args.only}
    hogs = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(args.hogs)]
    for hog in hogs:
        hog.start()
    passed = dict.fromkeys(chosen, 0)
    ran = dict.fromkeys(chosen, 0)
    try:
        for round_number in range(1, args.rounds + 1):
            for name, test in chosen.items():
                ok, seconds, last = run_once(test)
                ran[name] += 1
                passed[name] += ok
                print(f"round {round_number} {name}: {'pass' if ok else 'FAIL'} in "
                      f"{seconds:.0f} s ({last})", flush=True)
    finally:
        for hog in hogs:
            hog.terminate()
    for name in chosen:
        print(f"{name}: passed {passed[name]} of {ran[name]} beside {args.hogs} busy "
              f"processes", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
