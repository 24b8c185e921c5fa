"""The llama.cpp worker's command line (llamacpp_worker.py): the engine's size and caches, and
Dynamo's own runtime options."""

from __future__ import annotations

import argparse

from dynamo.common.configuration.groups.runtime_args import DynamoRuntimeArgGroup


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
        "--threads", type=int, default=None, help="CPU threads (default: usable cores, at most 8)"
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
    for name in ("n_ctx", "parallel"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be ≥ 1")
    return args
