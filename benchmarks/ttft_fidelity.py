"""How closely the agent's client-side TTFT/ITL follow what the server itself reports.

For the same requests, compares the streaming client's TTFT (perf_counter_ns to the first
content-bearing chunk) with Dynamo's own `nvext.timing.ttft_ms`, and the client's mean gap
between chunks with the server's mean inter-token time ((total_time - ttft) / (tokens - 1)).
Prints median and p95 of |client - server| per concurrency level.

The raw comparison is always printed. Next to it, a decomposition on the shared wall clock:
the server's `request_received_ms` (epoch, whole milliseconds) splits client TTFT into
send -> received (client sending + server accept/parse before its clock starts), the server's
`ttft_ms`, and first token -> client (SSE framing, transport, SDK parsing). The best-matched
comparison is client TTFT against (received - send) + ttft_ms: what is left is the first
token's way out to the client plus the client's own stamping cost. Dynamo's /metrics TTFT
and request-duration histograms (Δsum/Δcount per level) are set beside the nvext means.
`--no-quick-ack` measures the client without its TCP_QUICKACK (see agents/transport.py).

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
                    max_tokens: int, quick_ack: bool = True) -> list[Any]:
    from agents.llm import CallInfo, ClientSettings, LLMCallFailed, StreamingClient

    client = StreamingClient(ClientSettings(base_url=base_url, model=model, max_attempts=1,
                                            request_timeout_s=300, quick_ack=quick_ack))
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


def med(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _ms(row: dict[str, Any], key: str) -> str:
    """A figure of a result row for the tables: two decimals, or n/a when not measured."""
    return f"{row[key]:.2f}" if row[key] is not None else "n/a"


def compare(records: list[Any]) -> dict[str, Any]:
    ttft_diff, itl_diff, client_ttft, server_ttft = [], [], [], []
    send_to_recv, first_out, matched_diff, e2e_diff = [], [], [], []
    server_ttft_all, server_total_all = [], []
    from analysis.metrics.latency import timing_ms

    for r in records:
        shown = timing_ms(r)  # the analysis's own derivation from the raw times
        ttft, e2e, gaps = shown["ttft_ms"], shown["e2e_ms"], shown["itl_ms"]
        timing = (r.server or {}).get("timing") or {}
        if "ttft_ms" in timing:
            server_ttft_all.append(timing["ttft_ms"])
        if "total_time_ms" in timing:
            server_total_all.append(timing["total_time_ms"])
        if r.error or ttft is None or "ttft_ms" not in timing:
            continue
        client_ttft.append(ttft)
        server_ttft.append(timing["ttft_ms"])
        ttft_diff.append(abs(ttft - timing["ttft_ms"]))
        if "request_received_ms" in timing:
            # Same host, same wall clock; the server's stamp is whole milliseconds
            # (truncated), so each split is good to about 1 ms and biased by ~0.5 ms.
            before = timing["request_received_ms"] - r.start_unix_ns / 1e6
            send_to_recv.append(before)
            first_out.append(ttft - before - timing["ttft_ms"])
            matched_diff.append(abs(ttft - (before + timing["ttft_ms"])))
        if e2e is not None and "total_time_ms" in timing:
            e2e_diff.append(e2e - timing["total_time_ms"])
        tokens = r.completion_tokens or 0
        if gaps and tokens > 1 and "total_time_ms" in timing:
            server_itl = (timing["total_time_ms"] - timing["ttft_ms"]) / (tokens - 1)
            itl_diff.append(abs(statistics.mean(gaps) - server_itl))
    return {
        "requests": len(records), "compared": len(ttft_diff),
        "errors": sum(1 for r in records if r.error),
        "client_ttft_median_ms": med(client_ttft),
        "send_to_received_median_ms": med(send_to_recv),
        "first_token_to_client_median_ms": med(first_out),
        "matched_absdiff_median_ms": med(matched_diff),
        "matched_absdiff_p95_ms": pct(matched_diff, 95) if matched_diff else None,
        "client_e2e_minus_server_total_median_ms": med(e2e_diff),
        "nvext_ttft_mean_ms": statistics.mean(server_ttft_all) if server_ttft_all else None,
        "nvext_total_mean_ms": statistics.mean(server_total_all) if server_total_all else None,
        "server_ttft_median_ms": statistics.median(server_ttft) if server_ttft else None,
        "ttft_absdiff_median_ms": statistics.median(ttft_diff) if ttft_diff else None,
        "ttft_absdiff_p95_ms": pct(ttft_diff, 95) if ttft_diff else None,
        "itl_absdiff_median_ms": statistics.median(itl_diff) if itl_diff else None,
        "itl_absdiff_p95_ms": pct(itl_diff, 95) if itl_diff else None,
    }


def scrape_histograms(base_url: str) -> dict[str, float]:
    """Sum and count of Dynamo's frontend TTFT and request-duration histograms."""
    import httpx

    from bankbench.serve.metrics import metric_sum, metrics_url, parse_samples

    try:
        samples = parse_samples(httpx.get(metrics_url(base_url), timeout=10).text)
    except httpx.HTTPError:
        return {}
    return {key: metric_sum(samples, f"dynamo_frontend_{key}")
            for key in ("time_to_first_token_seconds_sum", "time_to_first_token_seconds_count",
                        "request_duration_seconds_sum", "request_duration_seconds_count")}


def histogram_means(before: dict[str, float], after: dict[str, float]) -> dict[str, Any]:
    """Mean TTFT and duration over one level from the /metrics deltas (ms)."""
    out: dict[str, Any] = {"metrics_ttft_mean_ms": None, "metrics_duration_mean_ms": None}
    for name, key in (("time_to_first_token_seconds", "metrics_ttft_mean_ms"),
                      ("request_duration_seconds", "metrics_duration_mean_ms")):
        try:
            count = after[f"{name}_count"] - before[f"{name}_count"]
            total = after[f"{name}_sum"] - before[f"{name}_sum"]
        except KeyError:
            continue
        if count > 0:
            out[key] = total / count * 1000
    return out


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
    p.add_argument("--no-quick-ack", action="store_true",
                   help="leave the client's TCP_QUICKACK off (shows the delayed-ACK stall)")
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
        quick_ack = not args.no_quick_ack
        asyncio.run(run_level(base_url, model, 1, 4, 8, quick_ack))  # warm-up: tokenizer
        for concurrency, n in zip(args.concurrency, counts, strict=True):
            before = scrape_histograms(base_url)
            t0 = time.perf_counter()
            records = asyncio.run(run_level(base_url, model, concurrency, n, args.max_tokens,
                                            quick_ack))
            row = {"concurrency": concurrency, "wall_s": round(time.perf_counter() - t0, 2),
                   **compare(records), **histogram_means(before, scrape_histograms(base_url))}
            results.append(row)
            print(json.dumps(row), flush=True)
    finally:
        if state is not None:
            from bankbench.serve import api

            api.down(state)
    print(f"\nmachine: {platform.machine()}, {os.cpu_count()} CPUs; server: "
          f"{'cpu-mocker' if state else base_url}; max_tokens {args.max_tokens}; "
          f"client quick-ACK {'off' if args.no_quick_ack else 'on'}")
    print("raw: client TTFT vs nvext ttft_ms; ITL: client mean gap vs (total - ttft)/(n - 1)")
    print(f"{'conc':>5} {'n':>5} {'client TTFT':>12} {'server TTFT':>12} "
          f"{'|Δ|TTFT med':>12} {'p95':>8} {'|Δ|ITL med':>11} {'p95':>8}")
    for r in results:
        print(f"{r['concurrency']:>5} {r['compared']:>5} {_ms(r, 'client_ttft_median_ms'):>12} "
              f"{_ms(r, 'server_ttft_median_ms'):>12} {_ms(r, 'ttft_absdiff_median_ms'):>12} "
              f"{_ms(r, 'ttft_absdiff_p95_ms'):>8} {_ms(r, 'itl_absdiff_median_ms'):>11} "
              f"{_ms(r, 'itl_absdiff_p95_ms'):>8}")
    print("\ndecomposition (medians, ms; server stamp in whole ms): client TTFT = "
          "send->received + server ttft_ms + first token->client")
    print(f"{'conc':>5} {'send->recv':>11} {'server TTFT':>12} {'tok->client':>12} "
          f"{'|Δ|matched med':>15} {'p95':>8} {'e2e-total':>10}")
    for r in results:
        print(f"{r['concurrency']:>5} {_ms(r, 'send_to_received_median_ms'):>11} "
              f"{_ms(r, 'server_ttft_median_ms'):>12} "
              f"{_ms(r, 'first_token_to_client_median_ms'):>12} "
              f"{_ms(r, 'matched_absdiff_median_ms'):>15} {_ms(r, 'matched_absdiff_p95_ms'):>8} "
              f"{_ms(r, 'client_e2e_minus_server_total_median_ms'):>10}")
    print("\nmeans over each level (ms): nvext vs /metrics Δsum/Δcount")
    print(f"{'conc':>5} {'nvext TTFT':>11} {'metrics TTFT':>13} {'nvext total':>12} "
          f"{'metrics dur':>12}")
    for r in results:
        print(f"{r['concurrency']:>5} {_ms(r, 'nvext_ttft_mean_ms'):>11} "
              f"{_ms(r, 'metrics_ttft_mean_ms'):>13} {_ms(r, 'nvext_total_mean_ms'):>12} "
              f"{_ms(r, 'metrics_duration_mean_ms'):>12}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
