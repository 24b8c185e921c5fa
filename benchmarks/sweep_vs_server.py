"""Does the sweep's client-side timing agree with the server's own books?

Runs (or reads) a concurrency sweep on the cpu-mocker profile and prints, per level, the mean
TTFT bankbench measured on streamed chunks next to the mean implied by Dynamo's
`dynamo_frontend_time_to_first_token_seconds` (Δsum/Δcount between the before/after /metrics
scrapes), their ratio, and the request counts of both sides (which must be equal).

    .venv/bin/python benchmarks/sweep_vs_server.py                 # run a fresh sweep: 1,4,16
    .venv/bin/python benchmarks/sweep_vs_server.py --sweep DIR     # read an existing one
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from analysis.metrics.server import server_metrics
from analysis.tables import load


def run_sweep(out: Path, levels: str, attempts: int, speedup: str) -> Path:
    cmd = [
        sys.executable, "-m", "bankbench", "sweep", "--profile", "cpu-mocker",
        "--levels", levels, "--attempts", str(attempts), "--source", "sample",
        "--set", f"speedup_ratio={speedup}", "--out", str(out), "--name", "fidelity",
    ]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True)
    print(f"sweep wall time: {time.perf_counter() - t0:.0f} s\n")
    return out / "fidelity"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sweep", type=Path, help="existing sweep directory to read")
    ap.add_argument("--levels", default="1,4,16")
    ap.add_argument("--attempts", type=int, default=2, help="28 trials per level with the sample")
    ap.add_argument("--speedup", default="1", help="mocker speedup ratio")
    args = ap.parse_args()
    sweep = args.sweep or run_sweep(Path(tempfile.mkdtemp()), args.levels, args.attempts,
                                    args.speedup)
    tables = load(sweep)
    print(f"{'level':>5} {'client TTFT ms':>15} {'server TTFT ms':>15} {'ratio':>7} "
          f"{'client reqs':>12} {'server reqs':>12} {'equal':>6}")
    ok = True
    for job in tables.jobs.itertuples():
        reqs = tables.requests[tables.requests.level == job.level]
        server = server_metrics(Path(job.path) / "metrics_before.prom",
                                Path(job.path) / "metrics_after.prom")
        client_ttft = reqs.ttft_ms.mean()
        server_ttft = server.get("frontend_ttft_ms_mean", float("nan"))
        server_n = int(server.get("server_requests", -1))
        equal = server_n == len(reqs)
        ok &= equal
        print(f"{job.level:>5} {client_ttft:>15.2f} {server_ttft:>15.2f} "
              f"{client_ttft / server_ttft:>7.3f} {len(reqs):>12} {server_n:>12} "
              f"{'yes' if equal else 'NO':>6}")
    _print_decomposition(tables.requests)
    return 0 if ok else 1


def _print_decomposition(requests) -> None:
    """Where the client-minus-server TTFT goes, from each request's own nvext timing."""
    timed = requests.dropna(subset=["ttft_ms", "server_ttft_ms", "send_to_received_ms"])
    if timed.empty:
        return
    print("\nper request, medians (ms): client TTFT = send->received + server ttft_ms + "
          "first token->client")
    print(f"{'level':>5} {'client TTFT':>12} {'send->recv':>11} {'server TTFT':>12} "
          f"{'tok->client':>12} {'n':>5}")
    for level, group in timed.groupby("level"):
        out = group.ttft_ms - group.send_to_received_ms - group.server_ttft_ms
        print(f"{level:>5} {group.ttft_ms.median():>12.2f} "
              f"{group.send_to_received_ms.median():>11.2f} "
              f"{group.server_ttft_ms.median():>12.2f} {out.median():>12.2f} {len(group):>5}")


if __name__ == "__main__":
    sys.exit(main())
