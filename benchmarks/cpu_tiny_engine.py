"""The embedded default's engine: prefill and decode speed, and what batching buys per level.

Starts the cpu-tiny stack (real Dynamo frontend + llama.cpp worker + SmolLM2-135M), then streams
chat completions through the frontend, timed with perf_counter_ns on the client and by the
worker's own per-request timings (llama.cpp's, `bankbench/serve/engine_speed.py`):

- prefill tokens/s: prompts of ~1,800 tokens that share nothing with what was served before
  but the chat template's first few tokens (at most TEMPLATE_SHARED; their cached count is
  taken off), one at a time: new prompt tokens / llama.cpp's prompt time, and / client TTFT;
- decode tokens/s: one stream of N tokens (min_tokens = max_tokens = N): tokens after the first
  over the time from the first to the last, llama.cpp's and the client's;
- per level c in --levels: c clients each send --rounds requests back to back (short prompt,
  N tokens), so c requests are in flight at once: TTFT and E2E p50 over all requests, and the
  aggregate output tokens/s (all completion tokens / wall time of the level).

`--sweep-shaped` instead sends the sweep's own requests (the kept tool prompt, the agent's
tools, guided vs unguided) and prints where each request's time goes
(benchmarks/cpu_tiny_sweep_shape.py), once per `--settings` entry of worker arguments;
`--from-sweep DIR` prints the same split for a finished sweep's own requests, per level.

  python benchmarks/cpu_tiny_engine.py [--levels 1,2,4] [--tokens 64] [--rounds 3]
  python benchmarks/cpu_tiny_engine.py --sweep-shaped [--settings "'';--threads 1"]
  python benchmarks/cpu_tiny_engine.py --from-sweep jobs/sweep-…
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
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bankbench.serve import api  # noqa: E402
from bankbench.serve.engine_speed import TIMINGS_FILE, read_timings  # noqa: E402

# A "fresh" prompt still shares the chat template's opening (`<|im_start|>system\n[`) with
# every earlier one; llama.cpp reports those few tokens as cached.
TEMPLATE_SHARED = 8


def stream(base_url: str, model: str, body: dict) -> dict:
    """One streamed chat completion: client times, usage and the tool calls it returned."""
    body = {"model": model, "stream": True, "stream_options": {"include_usage": True}, **body}
    start = time.perf_counter_ns()
    first = None
    usage: dict = {}
    calls: dict[int, dict] = {}
    with httpx.stream("POST", f"{base_url}/chat/completions", json=body, timeout=3600) as r:
        r.raise_for_status()
        for line in r.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            for choice in chunk["choices"]:
                delta = choice.get("delta") or {}
                if first is None and (delta.get("content") or delta.get("tool_calls")):
                    first = time.perf_counter_ns()
                for tc in delta.get("tool_calls") or []:
                    call = calls.setdefault(tc.get("index", 0), {"name": "", "arguments": ""})
                    fn = tc.get("function") or {}
                    call["name"] += fn.get("name") or ""
                    call["arguments"] += fn.get("arguments") or ""
            usage = chunk.get("usage") or usage
    end = time.perf_counter_ns()
    return {"ttft_s": ((first or end) - start) / 1e9, "e2e_s": (end - start) / 1e9,
            "e2e_ms": (end - start) / 1e6,
            "prompt": usage.get("prompt_tokens", 0),
            "cached": (usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0),
            "completion": usage.get("completion_tokens", 0),
            "tool_calls": [calls[i] for i in sorted(calls)]}


def chat(base_url: str, model: str, messages: list[dict], tokens: int) -> dict:
    return stream(base_url, model, {"messages": messages, "max_tokens": tokens,
                                    "min_tokens": tokens, "temperature": 0.8})


def long_prompt(tag: str) -> list[dict]:
    # Unique after the template's opening, so no slot or prompt cache can serve the rest.
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
            row = chat(base_url, model, msg, tokens)
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


def fresh_prefill(base: str, model: str, timings: Path, n: int) -> str:
    """Prefill of `n` fresh ~1.8k-token prompts: llama.cpp's rate and the client's."""
    engine, client, sizes = [], [], []
    for _ in range(n):
        seen = len(read_timings([timings]))
        p = chat(base, model, long_prompt(uuid.uuid4().hex[:8]), 1)
        if p["cached"] > TEMPLATE_SHARED:
            raise SystemExit(f"a fresh prompt found {p['cached']} tokens cached (more than the "
                             f"template's {TEMPLATE_SHARED}): another client shares this stack?")
        new = p["prompt"] - p["cached"]
        sizes.append(new)
        client.append(new / p["ttft_s"])
        line = read_timings([timings])[seen:]
        if line and line[-1].prefill_ms:
            engine.append((line[-1].prefill_tokens or 0) / (line[-1].prefill_ms / 1e3))
    own = f"{statistics.median(engine):.0f} tokens/s (llama.cpp's timings)" if engine else \
        "no engine timings"
    return (f"prefill: {statistics.median(sizes):.0f} new tokens per prompt, {own}, "
            f"{statistics.median(client):.0f} tokens/s (client TTFT), median of {n}")


def one_stream_decode(base: str, model: str, timings: Path, tokens: int) -> str:
    seen = len(read_timings([timings]))
    one = chat(base, model, [{"role": "user", "content": "Tell a long story."}], tokens)
    client = (one["completion"] - 1) / (one["e2e_s"] - one["ttft_s"])
    line = read_timings([timings])[seen:]
    rate = line[-1].decode_rate if line else None
    own = f"{rate:.1f} tokens/s (llama.cpp's timings)" if rate else "no engine timings"
    return f"decode: {own}, {client:.1f} tokens/s (client), one stream of {one['completion']}"


def bare(args: argparse.Namespace) -> None:
    started = time.perf_counter()
    options = {"worker_args": args.worker_args} if args.worker_args else None
    with api.running("cpu-tiny", options=options) as state:
        print(f"stack up in {time.perf_counter() - started:.1f} s; engine "
              f"xllamacpp {state.versions.get('xllamacpp')}", flush=True)
        base, model = state.base_url, state.model
        assert state.state_dir is not None
        timings = state.state_dir / TIMINGS_FILE.format(index=0)
        chat(base, model, [{"role": "user", "content": "warm up"}], 8)
        print(fresh_prefill(base, model, timings, args.prefill_prompts), flush=True)
        print(one_stream_decode(base, model, timings, args.tokens), flush=True)
        levels = [level(base, model, int(c), args.tokens, args.rounds)
                  for c in args.levels.split(",")]
    print("| c | requests | TTFT p50 | E2E p50 | aggregate output tok/s | × c1 |")
    print("|---|---|---|---|---|---|")
    base_rate = levels[0]["aggregate_tok_s"]
    for row in levels:
        print(f"| {row['c']} | {row['requests']} | {row['ttft_p50_s'] * 1000:.0f} ms | "
              f"{row['e2e_p50_s']:.2f} s | {row['aggregate_tok_s']:.1f} | "
              f"{row['aggregate_tok_s'] / base_rate:.2f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--levels", default="1,2,4")
    ap.add_argument("--tokens", type=int, default=64, help="completion tokens per request")
    ap.add_argument("--rounds", type=int, default=3,
                    help="requests per client per level (sweep-shaped: passes over the tasks)")
    ap.add_argument("--prefill-prompts", type=int, default=3)
    ap.add_argument("--worker-args", default="", help="extra llama.cpp worker arguments")
    ap.add_argument("--sweep-shaped", action="store_true",
                    help="the sweep's own requests, split into wait, prefill and decode")
    ap.add_argument("--settings", default="",
                    help="sweep-shaped: worker arguments per engine setting, ';'-separated "
                    "(e.g. \";--threads 1\": defaults, then one thread)")
    ap.add_argument("--scenarios", type=int, default=4, help="sweep-shaped: sample scenarios")
    ap.add_argument("--prompt-folder", type=Path,
                    help="sweep-shaped: keep the settings' tool-prompt copies in this folder "
                    "(default: one of the run's own, seeded from the shared cache), so a later "
                    "run skips their cold reads")
    ap.add_argument("--from-sweep", metavar="SWEEP_DIR", type=Path,
                    help="no stack: the breakdown of a finished cpu-tiny sweep's own requests "
                    "(its worker's timings), per level, guided or free")
    args = ap.parse_args()
    if args.from_sweep:
        from benchmarks.cpu_tiny_sweep_shape import breakdown_table, sweep_rows

        print("\n".join(breakdown_table(sweep_rows(args.from_sweep))))
        return
    print(f"load average before: {os.getloadavg()}", flush=True)
    if args.sweep_shaped:
        from benchmarks.cpu_tiny_sweep_shape import run

        # '' (or "") stands for the defaults, as the help's example writes it
        settings = [s.strip() for s in args.settings.split(";")] if args.settings else [
            args.worker_args]
        settings = ["" if s in ("''", '""') else s for s in settings]
        run(stream, settings, args.scenarios, args.rounds, args.tokens, args.prompt_folder)
    else:
        bare(args)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
