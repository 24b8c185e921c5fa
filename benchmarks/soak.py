"""Soak: many trials at high concurrency through injected server faults — is every trial
accounted for, every fault counted, and quality averaged only over trials that mean something?

Real parts: the `harbor` CLI, BankingAgent, LocalEnvironment, the Dynamo frontend with the mocker
engine (cpu-mocker). Between agent and frontend sits tests/support/fault_proxy.py, a
FAULT-INJECTING TEST PROXY (not a model server): a seeded ~10 % of requests get a 429, 500 or 503,
a connection dropped before the first byte or mid-stream, a stall past the client's timeout, or a
malformed SSE event. Its error bodies quote the request's Authorization header, and a unique API
key is set, so the run also shows whether a key can reach the job directory.

    .venv/bin/python benchmarks/soak.py                       # 200 trials at -n 32
    .venv/bin/python benchmarks/soak.py --trials 30 -n 8      # the size the test suite runs

An outage takes whole agent sessions (default one trial in 20, spread over the run): every
request of those sessions, retries included, gets a 503, so exactly those trials exhaust their
tries and must come out infra_failed and stay out of TSQ, whatever the timing.

Prints the status table, fault and retry counts, and TSQ over scored trials. Exit 1 when a
trial is unaccounted for, a harness failure occurred, a fault went uncounted or the key leaked.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import re
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bankbench.sweep.harbor_job import SKIP_PROVIDER_MAPPING  # noqa: E402
from tests.support.fault_proxy import FaultProxy, FaultSchedule  # noqa: E402

FAULTS = ["http_429", "http_500", "http_503", "drop_before_first_byte", "drop_mid_stream",
          "stall", "malformed_sse"]
KEY_ENV = "BANKBENCH_SOAK_KEY"
STALL_S, CLIENT_TIMEOUT_S = 8.0, 3.0


@dataclass
class SoakResult:
    job_dir: Path
    trials: int
    statuses: Counter
    injected: Counter
    requests_seen: int
    retries: int
    failed_requests: int
    n_records: int
    tsq_scored: float | None
    tsq_in_quality: float | None
    tsq_all_rows: float | None
    wall_s: float
    key_found_in: list[str] = field(default_factory=list)
    # Trials the outage took (a session id is the trial's name) and the status each came to.
    outage: dict[str, str] = field(default_factory=dict)

    @property
    def faults_total(self) -> int:
        return sum(n for f, n in self.injected.items() if f != "pass")


_BANK_CALL = re.compile(r"^/app/bank call (\S+) '(.*)'$", re.M)


def scripted_sessions(tasks: Path) -> dict[str, list[str]]:
    """Model outputs for the mocker's replay trace, one session per task: one turn with the
    oracle's tool calls (all of them for even rows, the first half for odd rows, so TSQ
    varies), then a short final answer."""
    from bankbench.serve.replay import tool_call_text

    sessions = {}
    for i, task in enumerate(sorted(p for p in tasks.iterdir() if (p / "task.toml").exists())):
        calls = [(name, json.loads(args)) for name, args in
                 _BANK_CALL.findall((task / "solution" / "solve.sh").read_text())]
        if i % 2:
            calls = calls[: max(1, len(calls) // 2)]
        sessions[f"soak-{task.name}"] = [
            "\n".join(tool_call_text(name, args) for name, args in calls), "Done."]
    return sessions


def _harbor_cmd(tasks: Path, jobs: Path, name: str, base_url: str, model: str,
                concurrency: int, attempts: int) -> list[str]:
    harbor = Path(sys.executable).with_name("harbor")
    return [
        str(harbor if harbor.exists() else "harbor"), "run", "-p", str(tasks),
        "--agent", "agents.banking:BankingAgent", "-m", model,
        "--env", "environments.local:LocalEnvironment", "-n", str(concurrency),
        "-k", str(attempts), "-o", str(jobs), "--job-name", name, "--quiet", "--yes",
        SKIP_PROVIDER_MAPPING,  # as a sweep runs it: no LiteLLM import for the provider
        "--ak", f"base_url={base_url}", "--ak", f"api_key_env={KEY_ENV}",
        "--ak", f"request_timeout_s={CLIENT_TIMEOUT_S}",
        "--ak", "nvext_annotations=output_replay_id:soak-{scenario_id}:{request_index}",
    ]


async def _run_job(cmd: list[str], env: dict[str, str], log: Path) -> int:
    with log.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(
            *cmd, stdout=out, stderr=asyncio.subprocess.STDOUT, env=env,
            stdin=asyncio.subprocess.DEVNULL)
        return await proc.wait()


def files_containing(root: Path, needle: str) -> list[str]:
    data = needle.encode()
    return [str(p) for p in root.rglob("*") if p.is_file() and data in p.read_bytes()]


def run_soak(work: Path, *, trials: int = 200, concurrency: int = 32, fault_rate: float = 0.1,
             seed: int = 11, n_tasks: int = 10, speedup: float = 10.0, workers: int = 2,
             outage: int = 0, log=print) -> SoakResult:
    from analysis.tables import load
    from bankbench.serve import api
    from tasks.banking.build import build_tasks

    attempts = math.ceil(trials / n_tasks)
    tasks = work / "tasks"
    build_tasks(source="sample", out=tasks, limit=n_tasks, log=lambda line: None)
    key = "sk-soak-" + os.urandom(16).hex()
    env = {**os.environ, "HARBOR_TELEMETRY": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           KEY_ENV: key}
    log(f"soak: {n_tasks * attempts} trials ({n_tasks} tasks x {attempts}) at -n {concurrency}, "
        f"~{fault_rate:.0%} faults + an outage of {outage} trials, cpu-mocker speedup {speedup}")
    from bankbench.serve.replay import write_trace

    trace = write_trace(work / "trace.jsonl", scripted_sessions(tasks))
    state = api.up("cpu-mocker", workers=workers, state_dir=work / "server",
                   options={"speedup_ratio": speedup, "replay_trace": str(trace)})
    try:
        # Enough schedule entries for every request of the run (2 per trial plus retries).
        schedule = FaultSchedule.seeded(seed, n=trials * 10, faults=FAULTS, rate=fault_rate,
                                        stall_s=STALL_S)
        schedule.echo_auth_in_errors = True
        schedule.down_sessions = outage_positions(trials, outage)

        async def go() -> tuple[int, list[str], float, list[str]]:
            async with FaultProxy(upstream=state.base_url, schedule=schedule) as proxy:
                cmd = _harbor_cmd(tasks, work / "jobs", "soak", proxy.base_url, state.model,
                                  concurrency, attempts)
                t0 = time.perf_counter()
                rc = await _run_job(cmd, env, work / "harbor.log")
                return rc, list(proxy.seen), time.perf_counter() - t0, list(proxy.downed)

        rc, seen, wall, downed = asyncio.run(go())
    finally:
        api.down(state)
    if rc != 0:
        raise RuntimeError(f"harbor exited {rc}; see {work / 'harbor.log'}")

    job = work / "jobs" / "soak"
    tables = load(job)
    t, r = tables.trials, tables.requests
    scored = t[t.status == "scored"]
    in_quality = t[t.in_quality.astype(bool)]
    leaks = files_containing(work, key)
    status_of = dict(zip(t.trial, t.status, strict=True))
    return SoakResult(
        job_dir=job, trials=len(t), statuses=Counter(t.status), injected=Counter(seen),
        requests_seen=len(seen), retries=int(r.retries.sum()) if len(r) else 0,
        failed_requests=int(r.error_type.notna().sum()) if "error_type" in r else 0,
        n_records=len(r),
        tsq_scored=float(scored.tsq.mean()) if len(scored) else None,
        tsq_in_quality=float(in_quality.tsq.mean()) if len(in_quality) else None,
        # Every trial out of quality counted as 0 (the verifier may still have scored one).
        tsq_all_rows=float(t.tsq.where(t.in_quality.astype(bool), 0).fillna(0).mean())
        if len(t) else None,
        wall_s=wall, key_found_in=leaks,
        outage={name: str(status_of.get(name, "missing")) for name in downed},
    )


def outage_positions(trials: int, outage: int) -> frozenset[int]:
    """`outage` session positions spread evenly over a run of `trials` sessions."""
    return frozenset(int((i + 0.5) * trials / outage) for i in range(outage))


def problems(res: SoakResult, expected_trials: int) -> list[str]:
    out = []
    accounted = sum(res.statuses[s] for s in ("scored", "agent_failed", "infra_failed"))
    if res.trials != expected_trials or accounted != expected_trials:
        out.append(f"{expected_trials} trials planned, {res.trials} found, {accounted} accounted")
    if res.statuses["harness_failed"] or res.statuses["interrupted"] or res.statuses["running"]:
        out.append(f"harness_failed {res.statuses['harness_failed']}, "
                   f"interrupted {res.statuses['interrupted']}, "
                   f"running {res.statuses['running']}")
    # Every injected fault is either a counted retry or the failure of a request's last try.
    if res.retries + res.failed_requests != res.faults_total:
        out.append(f"{res.faults_total} faults injected but {res.retries} retries + "
                   f"{res.failed_requests} failed requests recorded")
    if res.requests_seen != res.n_records + res.retries:
        out.append(f"proxy saw {res.requests_seen} requests, records say "
                   f"{res.n_records + res.retries} (records + retries)")
    not_failed = {name: status for name, status in res.outage.items()
                  if status != "infra_failed"}
    if not_failed:
        out.append(f"trials the outage took did not come out infra_failed: {not_failed}")
    if res.key_found_in:
        out.append(f"API key found in {len(res.key_found_in)} file(s): {res.key_found_in[:3]}")
    return out


def print_table(res: SoakResult) -> None:
    print(f"\njob: {res.job_dir}   wall {res.wall_s:.0f} s")
    print(f"{'status':<16}{'trials':>8}")
    for status in ("scored", "agent_failed", "infra_failed", "harness_failed", "interrupted",
                   "running"):
        print(f"{status:<16}{res.statuses[status]:>8}")
    print(f"{'total':<16}{res.trials:>8}")
    print(f"\nrequests through the proxy: {res.requests_seen}; faults injected: {res.faults_total}")
    for fault in FAULTS:
        print(f"  {fault:<24}{res.injected[fault]:>6}")
    print(f"retries recorded: {res.retries}; requests failed after all tries: "
          f"{res.failed_requests}; call records: {res.n_records}")

    def fmt(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.3f}"
    print(f"TSQ mean over scored trials: {fmt(res.tsq_scored)}; over the quality set "
          f"(scored + agent_failed): {fmt(res.tsq_in_quality)}; naive mean over every row "
          f"(failures as 0): {fmt(res.tsq_all_rows)}")
    print(f"trials the outage took: {len(res.outage)}, infra_failed: "
          f"{sum(s == 'infra_failed' for s in res.outage.values())}")
    print(f"API key in job files: {'NONE' if not res.key_found_in else res.key_found_in}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("-n", "--concurrency", type=int, default=32)
    ap.add_argument("--fault-rate", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--tasks", type=int, default=10, help="sample scenarios used (<= 14)")
    ap.add_argument("--speedup", type=float, default=10.0, help="mocker speedup ratio")
    ap.add_argument("--outage", type=int,
                    help="an outage: every request of this many trials' sessions gets a 503, so "
                         "those trials exhaust their tries (0: none; default one trial in 20)")
    ap.add_argument("--keep", type=Path, help="work in this directory and keep it")
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="bankbench-soak-"))
    work.mkdir(parents=True, exist_ok=True)
    res = run_soak(work, trials=args.trials, concurrency=args.concurrency,
                   fault_rate=args.fault_rate, seed=args.seed, n_tasks=args.tasks,
                   speedup=args.speedup,
                   outage=args.trials // 20 if args.outage is None else args.outage)
    print_table(res)
    expected = math.ceil(args.trials / args.tasks) * args.tasks
    found = problems(res, expected)
    for p in found:
        print(f"PROBLEM: {p}")
    print("verdict: " + ("every trial and every fault accounted for" if not found else "FAILED"))
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
