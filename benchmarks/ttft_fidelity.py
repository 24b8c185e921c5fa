"""How closely the agent's client-side TTFT/ITL follow what the server itself reports.

For the same requests, compares the streaming client's TTFT (perf_counter_ns to the first
content-bearing chunk) with Dynamo's own `nvext.timing.ttft_ms`, and the client's mean gap
between chunks with the server's mean inter-token time ((total_time - ttft) / (tokens - 1)).
Prints median and p95 of |client - server| per concurrency level.

    python benchmarks/ttft_fidelity.py                      # starts cpu-mocker itself
    python benchmarks/ttft_fidelity.py --concurrency 1 64 --requests 64 256
    python benchmarks/ttft_fidelity.py --base-url URL --model M   # an already running Dynamo
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import time
from typing import Any


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


async def run_level(base_url: str, model: str, concurrency: int, requests: int,
                    max_tokens: int) -> list[Any]:
    from agents.llm import CallInfo, ClientSettings, LLMCallFailed, StreamingClient

    client = StreamingClient(ClientSettings(base_url=base_url, model=model, max_attempts=1,
                                            request_timeout_s=300))
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(requests):
        queue.put_nowait(i)
    records = []

    async def worker() -> None:
        while True:
            try:
                i = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            # Prompts of different lengths so prefill time varies between requests.
            words = " ".join(f"item{j}" for j in range(20 + (i * 37) % 400))
            info = CallInfo("bench", "bench", 1, 1, "agent", f"s{i}", request_index=i)
            try:
                reply = await client.chat([{"role": "user", "content": words}], info,
                                          max_tokens=max_tokens)
                records.append(reply.record)
            except LLMCallFailed as exc:
                records.append(exc.record)

    try:
        await asyncio.gather(*(worker() for _ in range(concurrency)))
    finally:
        await client.aclose()
    return records


def compare(records: list[Any]) -> dict[str, Any]:
    ttft_diff, itl_diff, client_ttft, server_ttft = [], [], [], []
    for r in records:
        timing = (r.server or {}).get("timing") or {}
        if r.error or r.ttft_ms is None or "ttft_ms" not in timing:
            continue
        client_ttft.append(r.ttft_ms)
        server_ttft.append(timing["ttft_ms"])
        ttft_diff.append(abs(r.ttft_ms - timing["ttft_ms"]))
        tokens = r.completion_tokens or 0
        if r.itl_ms and tokens > 1 and "total_time_ms" in timing:
            server_itl = (timing["total_time_ms"] - timing["ttft_ms"]) / (tokens - 1)
            itl_diff.append(abs(statistics.mean(r.itl_ms) - server_itl))
    return {
        "requests": len(records), "compared": len(ttft_diff),
        "errors": sum(1 for r in records if r.error),
        "client_ttft_median_ms": statistics.median(client_ttft) if client_ttft else None,
        "server_ttft_median_ms": statistics.median(server_ttft) if server_ttft else None,
        "ttft_absdiff_median_ms": statistics.median(ttft_diff) if ttft_diff else None,
        "ttft_absdiff_p95_ms": pct(ttft_diff, 95) if ttft_diff else None,
        "itl_absdiff_median_ms": statistics.median(itl_diff) if itl_diff else None,
        "itl_absdiff_p95_ms": pct(itl_diff, 95) if itl_diff else None,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--concurrency", type=int, nargs="+", default=[1, 64])
    p.add_argument("--requests", type=int, nargs="+", default=[48, 256],
                   help="requests per level (one value, or one per --concurrency level)")
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--workers", type=int, default=2, help="mocker workers (own stack only)")
    p.add_argument("--speedup", type=float, default=1.0, help="mocker speedup ratio")
    p.add_argument("--base-url", help="use this running Dynamo frontend instead")
    p.add_argument("--model", help="model name with --base-url")
    p.add_argument("--json", help="also write the figures to this file")
    args = p.parse_args()
    counts = args.requests if len(args.requests) == len(args.concurrency) \
        else [args.requests[0]] * len(args.concurrency)

    state = None
    if args.base_url:
        if not args.model:
            p.error("--model is required with --base-url")
        base_url, model = args.base_url, args.model
    else:
        from bankbench.serve import api

        print(f"starting cpu-mocker ({args.workers} workers, speedup {args.speedup}) …",
              flush=True)
        state = api.up("cpu-mocker", workers=args.workers,
                       options={"speedup_ratio": args.speedup})
        base_url, model = state.base_url, state.model
    results = []
    try:
        asyncio.run(run_level(base_url, model, 1, 4, 8))  # warm-up: connections, tokenizer
        for concurrency, n in zip(args.concurrency, counts, strict=True):
            t0 = time.perf_counter()
            records = asyncio.run(run_level(base_url, model, concurrency, n, args.max_tokens))
            row = {"concurrency": concurrency, "wall_s": round(time.perf_counter() - t0, 2),
                   **compare(records)}
            results.append(row)
            print(json.dumps(row), flush=True)
    finally:
        if state is not None:
            from bankbench.serve import api

            api.down(state)
    print(f"\nmachine: {platform.machine()}, {os.cpu_count()} CPUs; server: "
          f"{'cpu-mocker' if state else base_url}; max_tokens {args.max_tokens}")
    print(f"{'conc':>5} {'n':>5} {'client TTFT':>12} {'server TTFT':>12} "
          f"{'|Δ|TTFT med':>12} {'p95':>8} {'|Δ|ITL med':>11} {'p95':>8}")
    for r in results:
        def f(key: str, r: dict = r) -> str:
            return f"{r[key]:.2f}" if r[key] is not None else "n/a"
        print(f"{r['concurrency']:>5} {r['compared']:>5} {f('client_ttft_median_ms'):>12} "
              f"{f('server_ttft_median_ms'):>12} {f('ttft_absdiff_median_ms'):>12} "
              f"{f('ttft_absdiff_p95_ms'):>8} {f('itl_absdiff_median_ms'):>11} "
              f"{f('itl_absdiff_p95_ms'):>8}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
