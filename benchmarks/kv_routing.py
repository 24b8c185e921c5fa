"""KV-aware routing vs round-robin on the real Dynamo frontend with 4 mocker workers.

Multi-turn sessions, each with its own long system prompt (the shared prefix of all its turns)
and an `x-dynamo-session-id` header, are replayed against one stack per router mode. For each
mode it prints the share of prompt tokens served from the prefix cache (from the server's
`usage.prompt_tokens_details.cached_tokens`, and from the frontend's /metrics counters) and
the time to first token measured on the streamed chunks (time.perf_counter_ns).

    .venv/bin/python benchmarks/kv_routing.py                   # kv, kv:4, round-robin, affinity
    .venv/bin/python benchmarks/kv_routing.py --routers kv,round-robin --concurrency 4 --json o.json

`kv:W` is kv routing with --router-kv-overlap-score-weight W (Dynamo's default weight trades
cache hits for load balance when requests overlap). `affinity` is round-robin plus the
frontend's session affinity (--router-session-affinity-ttl-secs) keyed by the
x-dynamo-session-id header. `thompson` is bankbench's Thompson-sampling router component
(`--router thompson`: one mocker process per worker behind it; see docs/serving.md). TTFT
figures are for turns ≥ 2 (the turns that can hit the cache).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bankbench.serve import api
from bankbench.serve.metrics import metric_sum, parse_samples

WORDS = (
    "account balance transfer savings checking card statement deposit loan rate fee branch "
    "customer policy limit overdraft payment schedule verify identity dispute fraud alert "
    "mortgage interest credit debit wire routing beneficiary standing order currency"
).split()


def system_prompt(session: int, n_words: int) -> str:
    """A session's own long instructions: distinct from its first token on, so sessions share
    no cache blocks with each other, only with their own earlier turns."""
    rng = random.Random(session)
    body = " ".join(rng.choice(WORDS) for _ in range(n_words))
    return f"Session {session} banking policy. {body}"


async def one_turn(client: httpx.AsyncClient, state, session: int, messages: list[dict],
                   max_tokens: int) -> dict:
    body = {"model": state.model, "messages": messages, "stream": True,
            "max_tokens": max_tokens, "stream_options": {"include_usage": True}}
    headers = {"x-dynamo-session-id": f"kvbench-{session}"}
    start = time.perf_counter_ns()
    first_ns, text, usage = None, [], None
    async with client.stream("POST", f"{state.base_url}/chat/completions", json=body,
                             headers=headers) as resp:
        resp.raise_for_status()
        async for line in resp.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if chunk.get("usage"):
                usage = chunk["usage"]
            for choice in chunk.get("choices") or []:
                piece = choice.get("delta", {}).get("content")
                if piece:
                    if first_ns is None:
                        first_ns = time.perf_counter_ns() - start
                    text.append(piece)
    usage = usage or {}
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    return {"session": session, "ttft_ns": first_ns, "prompt_tokens": usage.get("prompt_tokens", 0),
            "cached_tokens": cached, "text": "".join(text)}


async def run_sessions(state, sessions: int, turns: int, words: int, max_tokens: int,
                       concurrency: int, think_ms: float) -> list[dict]:
    sem = asyncio.Semaphore(concurrency)
    records: list[dict] = []

    async def session_loop(client: httpx.AsyncClient, s: int) -> None:
        messages = [{"role": "system", "content": system_prompt(s, words)}]
        # Seeded think time between turns: without it the sessions move in lockstep and
        # round-robin can land every session on the same worker each turn by accident.
        rng = random.Random(1000 + s)
        for t in range(turns):
            await asyncio.sleep(rng.uniform(0, think_ms) / 1000)
            messages.append({"role": "user", "content": f"Question {t} about my account."})
            async with sem:
                rec = await one_turn(client, state, s, messages, max_tokens)
            rec["turn"] = t
            records.append(rec)
            messages.append({"role": "assistant", "content": rec["text"]})

    async with httpx.AsyncClient(timeout=120) as client:
        await asyncio.gather(*(session_loop(client, s) for s in range(sessions)))
    return records


def summarize(records: list[dict], before: dict, after: dict) -> dict:
    later = [r for r in records if r["turn"] > 0]
    ttft_ms = [r["ttft_ns"] / 1e6 for r in later if r["ttft_ns"] is not None]
    diff = {k: metric_sum(after, k) - metric_sum(before, k)
            for k in ("dynamo_frontend_cached_tokens_sum",
                      "dynamo_frontend_input_sequence_tokens_sum")}
    prompt = sum(r["prompt_tokens"] for r in records)
    return {
        "requests": len(records),
        "prompt_tokens": prompt,
        "cached_share_usage": sum(r["cached_tokens"] for r in records) / prompt if prompt else 0,
        "cached_share_later_turns": (sum(r["cached_tokens"] for r in later)
                                     / max(1, sum(r["prompt_tokens"] for r in later))),
        "cached_share_metrics": (diff["dynamo_frontend_cached_tokens_sum"]
                                 / max(1.0, diff["dynamo_frontend_input_sequence_tokens_sum"])),
        "ttft_ms_mean": statistics.fmean(ttft_ms) if ttft_ms else None,
        "ttft_ms_p50": statistics.median(ttft_ms) if ttft_ms else None,
        "ttft_ms_p90": (statistics.quantiles(ttft_ms, n=10)[-1] if len(ttft_ms) > 1
                        else None),
    }


def bench_router(mode: str, concurrency: int, args: argparse.Namespace, tmp: Path) -> dict:
    router, _, weight = mode.partition(":")
    options: dict = {"speedup_ratio": args.speedup_ratio}
    if args.worker_speedups:
        options["worker_speedup_ratios"] = args.worker_speedups
    if router == "affinity":
        router = "round-robin"
        options["router_session_affinity_ttl_secs"] = 300
    if router == "kv" and weight:
        options["frontend_args"] = ["--router-kv-overlap-score-weight", weight]
    label = f"{mode} c{concurrency}"
    print(f"[{label}] starting frontend + {args.workers} mocker workers …", file=sys.stderr)
    state = api.up("cpu-mocker", router=router, workers=args.workers, options=options,
                   state_dir=tmp / f"{mode}-{concurrency}")
    try:
        before = parse_samples(httpx.get(state.metrics_url, timeout=10).text)
        t0 = time.perf_counter()
        records = asyncio.run(run_sessions(state, args.sessions, args.turns, args.words,
                                           args.max_tokens, concurrency, args.think_ms))
        wall = time.perf_counter() - t0
        after = parse_samples(httpx.get(state.metrics_url, timeout=10).text)
    finally:
        api.down(state)
    summary = summarize(records, before, after) | {
        "router": mode, "concurrency": concurrency, "wall_s": wall}
    print(f"[{label}] done in {wall:.1f} s", file=sys.stderr)
    return summary


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--routers", default="kv,kv:4,round-robin,affinity,thompson",
                   help="comma-separated: kv, kv:W (kv with --router-kv-overlap-score-weight W), "
                   "round-robin, affinity, thompson (default kv,kv:4,round-robin,affinity,"
                   "thompson)")
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--sessions", type=int, default=8)
    p.add_argument("--turns", type=int, default=5)
    p.add_argument("--words", type=int, default=6000,
                   help="words of each session's system prompt (~1 token each)")
    p.add_argument("--max-tokens", type=int, default=32)
    p.add_argument("--concurrency", default="1,4",
                   help="comma-separated levels of requests in flight at most (default 1,4)")
    p.add_argument("--think-ms", type=float, default=1000.0,
                   help="each turn waits a seeded random 0..N ms first (default 1000)")
    p.add_argument("--speedup-ratio", type=float, default=1.0, help="mocker timing speed-up")
    p.add_argument("--worker-speedups", default=None,
                   help="per-worker speedup ratios, e.g. '1 1 1 0.25' (one worker 4x slower); "
                   "each worker then runs as its own mocker process, for every router")
    p.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = p.parse_args(argv)
    results = []
    with tempfile.TemporaryDirectory(prefix="kvbench-") as tmp:
        for level in (int(c) for c in args.concurrency.split(",")):
            for mode in args.routers.split(","):
                results.append(bench_router(mode.strip(), level, args, Path(tmp)))
    speeds = f" (speedups {args.worker_speedups})" if args.worker_speedups else ""
    print(f"\n{args.workers} mocker workers{speeds}, {args.sessions} sessions × "
          f"{args.turns} turns, "
          f"~{args.words}-word system prompt per session, think time 0–{args.think_ms:.0f} ms")
    print(f"{'router':<12} {'conc':>4} {'cached% (usage)':>15} {'cached% turns≥2':>16} "
          f"{'cached% (/metrics)':>19} {'TTFT mean ms':>13} {'p50':>7} {'p90':>7}")
    for r in results:
        def ms(v):
            return f"{v:7.1f}" if v is not None else "    n/a"

        print(f"{r['router']:<12} {r['concurrency']:>4} {100 * r['cached_share_usage']:14.1f}% "
              f"{100 * r['cached_share_later_turns']:15.1f}% "
              f"{100 * r['cached_share_metrics']:18.1f}% {ms(r['ttft_ms_mean']):>13} "
              f"{ms(r['ttft_ms_p50'])} {ms(r['ttft_ms_p90'])}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
