"""The embedded default's engine: prefill and decode speed, and what batching buys per level.

Starts the cpu-tiny stack (real Dynamo frontend + llama.cpp worker + SmolLM2-135M), then streams
chat completions through the frontend, timed with perf_counter_ns on the client:

- prefill tokens/s: prompts of ~1,000 tokens that share no prefix with anything served before
  (cached_tokens checked 0), one at a time: prompt tokens / TTFT;
- decode tokens/s: one stream of N tokens (min_tokens = max_tokens = N): (N − 1) / (E2E − TTFT);
- per level c in --levels: c clients each send --rounds requests back to back (short prompt,
  N tokens), so c requests are in flight at once: TTFT and E2E p50 over all requests, and the
  aggregate output tokens/s (all completion tokens / wall time of the level).

  python benchmarks/cpu_tiny_engine.py [--levels 1,2,4] [--tokens 64] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
import uuid

import httpx

from bankbench.serve import api


def stream(base_url: str, model: str, messages: list[dict], tokens: int) -> dict:
    body = {"model": model, "messages": messages, "stream": True, "max_tokens": tokens,
            "min_tokens": tokens, "stream_options": {"include_usage": True}, "temperature": 0.8}
    start = time.perf_counter_ns()
    first = None
    usage: dict = {}
    with httpx.stream("POST", f"{base_url}/chat/completions", json=body, timeout=900) as r:
        r.raise_for_status()
        for line in r.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if first is None and any(c["delta"].get("content") for c in chunk["choices"]):
                first = time.perf_counter_ns()
            usage = chunk.get("usage") or usage
    end = time.perf_counter_ns()
    return {"ttft_s": ((first or end) - start) / 1e9, "e2e_s": (end - start) / 1e9,
            "prompt": usage.get("prompt_tokens", 0),
            "cached": (usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0),
            "completion": usage.get("completion_tokens", 0)}


def long_prompt(tag: str) -> list[dict]:
    # Unique from the first token on, so no slot or prompt cache can serve any of it.
    rules = " ".join(f"Rule {i} for desk {tag}: verify the customer before account {i}."
                     for i in range(75))
    return [{"role": "system", "content": f"[{tag}] {rules}"},
            {"role": "user", "content": "What is my balance?"}]


def level(base_url: str, model: str, c: int, tokens: int, rounds: int) -> dict:
    rows: list[dict] = []
    lock = threading.Lock()

    def client(i: int) -> None:
        for k in range(rounds):
            msg = [{"role": "user", "content": f"Client {i}, request {k}: tell a story."}]
            row = stream(base_url, model, msg, tokens)
            with lock:
                rows.append(row)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(c)]
    start = time.perf_counter_ns()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = (time.perf_counter_ns() - start) / 1e9
    return {"c": c, "requests": len(rows), "wall_s": wall,
            "ttft_p50_s": statistics.median(r["ttft_s"] for r in rows),
            "e2e_p50_s": statistics.median(r["e2e_s"] for r in rows),
            "aggregate_tok_s": sum(r["completion"] for r in rows) / wall}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--levels", default="1,2,4")
    ap.add_argument("--tokens", type=int, default=64, help="completion tokens per request")
    ap.add_argument("--rounds", type=int, default=3, help="requests per client per level")
    ap.add_argument("--prefill-prompts", type=int, default=3)
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()}", flush=True)
    started = time.perf_counter()
    with api.running("cpu-tiny") as state:
        print(f"stack up in {time.perf_counter() - started:.1f} s; engine "
              f"xllamacpp {state.versions.get('xllamacpp')}", flush=True)
        base, model = state.base_url, state.model
        stream(base, model, [{"role": "user", "content": "warm up"}], 8)
        pre = [stream(base, model, long_prompt(uuid.uuid4().hex[:8]), 1)
               for _ in range(args.prefill_prompts)]
        assert all(p["cached"] == 0 for p in pre), pre
        prefill = statistics.median(p["prompt"] / p["ttft_s"] for p in pre)
        one = stream(base, model, [{"role": "user", "content": "Tell a long story."}],
                     args.tokens)
        decode = (one["completion"] - 1) / (one["e2e_s"] - one["ttft_s"])
        print(f"prefill: {statistics.median(p['prompt'] for p in pre):.0f}-token prompts, "
              f"{prefill:.0f} tokens/s (median of {len(pre)}); decode: {decode:.1f} tokens/s "
              f"(one stream, {one['completion']} tokens)", flush=True)
        levels = [level(base, model, int(c), args.tokens, args.rounds)
                  for c in args.levels.split(",")]
    print("| c | requests | TTFT p50 | E2E p50 | aggregate output tok/s | × c1 |")
    print("|---|---|---|---|---|---|")
    base_rate = levels[0]["aggregate_tok_s"]
    for row in levels:
        print(f"| {row['c']} | {row['requests']} | {row['ttft_p50_s'] * 1000:.0f} ms | "
              f"{row['e2e_p50_s']:.2f} s | {row['aggregate_tok_s']:.1f} | "
              f"{row['aggregate_tok_s'] / base_rate:.2f} |")
    print(f"load average after: {os.getloadavg()}")
    sys.exit(0)


if __name__ == "__main__":
    main()
