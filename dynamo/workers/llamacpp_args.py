"""The llama.cpp worker's command line (llamacpp_worker.py): the engine's size and caches, and
Dynamo's own runtime options."""

from __future__ import annotations

import argparse

from dynamo.common.configuration.groups.runtime_args import DynamoRuntimeArgGroup

# KV cache types llama.cpp's CPU backend stores and attends over (ggml type names).
KV_TYPES = ("f16", "bf16", "q8_0", "q4_0")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Serve a GGUF model with llama.cpp (xllamacpp) behind the Dynamo frontend."
    )
    parser.add_argument("--model-path", required=True, help="the GGUF file")
    parser.add_argument("--model-name", required=True, help="name clients use in 'model'")
    parser.add_argument(
        "--tokenizer-path",
        default=None,
        help="folder with tokenizer.json, tokenizer_config.json (chat template) and "
        "config.json that the frontend loads; default: the GGUF's folder",
    )
    parser.add_argument(
        "--n-ctx",
        type=int,
        default=8192,
        help="context window of each request in tokens (default 8192, SmolLM2-135M's trained "
        "window: the 20 banking tool schemas alone take ~4.7k tokens); the KV cache holds "
        "--parallel times this",
    )
    parser.add_argument(
        "--parallel",
        type=int,
        default=4,
        help="requests decoded together in one batch (llama.cpp slots, default 4); more wait "
        "in llama.cpp's queue",
    )
    parser.add_argument(
        "--threads", type=int, default=None,
        help="CPU threads for decoding (default: usable cores, at most 8)",
    )
    parser.add_argument(
        "--threads-batch", type=int, default=None,
        help="CPU threads for reading prompts (default: --threads)",
    )
    parser.add_argument(
        "--batch-size", type=int, default=None,
        help="most prompt tokens llama.cpp takes into one step (n_batch; default: "
        "llama.cpp's, 2048)",
    )
    parser.add_argument(
        "--ubatch-size", type=int, default=None,
        help="most tokens computed at once inside a step (n_ubatch; default: llama.cpp's, 512)",
    )
    parser.add_argument(
        "--thread-wait", choices=("sleep", "spin"), default=None,
        help="what llama.cpp's threads do while they wait for each other inside a step: "
        "sleep at once (OpenMP's passive policy) or spin first (OpenMP's default: many times "
        "slower when another process takes a core); default: sleep, unless OMP_WAIT_POLICY "
        "is set",
    )
    parser.add_argument(
        "--cache-type-k", choices=KV_TYPES, default="f16",
        help="KV cache type of keys (default f16; q8_0 halves the cache and its copies)",
    )
    parser.add_argument(
        "--cache-type-v", choices=KV_TYPES, default="f16",
        help="KV cache type of values (default f16; anything but f16 needs --flash-attn on)",
    )
    parser.add_argument(
        "--flash-attn", choices=("auto", "on", "off"), default="off",
        help="llama.cpp's fused attention kernel (default off: on this CPU build it costs ~1.8x "
        "per decoded token over a ~5k-token context and reads long prompts ~2x slower; auto: on "
        "where the backend has it, which the CPU backend does)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="default sampling seed for requests without one (default: random per request)",
    )
    parser.add_argument(
        "--cache-ram-mib",
        type=int,
        default=1024,
        help="host memory for llama.cpp's prompt cache (MiB, default 1024): the KV of a prompt "
        "whose slot is taken by another request is kept and restored when it comes back; 0 "
        "disables",
    )
    parser.add_argument(
        "--fanout-min-tokens",
        type=int,
        default=1024,
        help="when a request whose prompt and reply reach this many tokens ends, copy its slot's "
        "KV to the idle slots that hold no long prompt (llama.cpp slot save/restore, tens of ms), "
        "so concurrent requests sharing that prefix do not each read it cold (default 1024; 0 "
        "disables)",
    )
    parser.add_argument(
        "--prompt-cache-dir",
        default=None,
        help="keep the first copied long prompt's slot KV (see --fanout-min-tokens) in this "
        "folder, keyed by model file, xllamacpp version, --n-ctx and KV cache types, and restore "
        "it into every slot at start, so a new worker's first request sharing that prefix reads "
        "it from cache (default: off; slots start empty)",
    )
    parser.add_argument(
        "--prompt-cache-keep",
        type=int,
        default=2,
        help="kept prompts in --prompt-cache-dir, newest first (default 2; ~23 KB per token "
        "for SmolLM2-135M)",
    )
    parser.add_argument(
        "--timings-log",
        default=None,
        help="append one JSON line per request with llama.cpp's own timings (prefill and "
        "decode tokens and ms, cached tokens, whether a grammar applied, requests in flight) "
        "to this file (default: none)",
    )
    parser.add_argument("--component", default="backend", help="Dynamo component name")
    parser.add_argument(
        "--shutdown-grace-s",
        type=float,
        default=1.0,
        help="on SIGTERM, seconds between leaving discovery and draining in-flight requests "
        "(Dynamo's DYN_GRACEFUL_SHUTDOWN_GRACE_PERIOD_SECS, which wins when set; Dynamo "
        "defaults to 5 s, long for a local stack stopped as a whole)",
    )
    DynamoRuntimeArgGroup().add_arguments(parser)
    args = parser.parse_args(argv)
    for name in ("n_ctx", "parallel", "threads", "threads_batch", "batch_size", "ubatch_size"):
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.error(f"--{name.replace('_', '-')} must be ≥ 1")
    if args.cache_type_v != "f16" and args.flash_attn == "off":
        parser.error("--cache-type-v other than f16 needs --flash-attn auto or on")
    return args
