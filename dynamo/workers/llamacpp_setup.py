"""The llama.cpp engine's set-up from the worker's command line (llamacpp_args.py): the
xllamacpp `CommonParams` the server starts with, and how its threads wait for each other."""

from __future__ import annotations

import argparse
import os
from typing import Any

# --flash-attn → llama.cpp's flash attention setting.
FLASH_ATTN = {"auto": "AUTO", "on": "ENABLED", "off": "DISABLED"}


def set_thread_wait(choice: str | None) -> None:
    """OpenMP's wait policy for llama.cpp's threads. OpenMP reads it once, when llama.cpp's
    library loads: call this before the first `import xllamacpp`.

    Spinning threads (OpenMP's default) wait at each of the hundreds of barriers in a token's
    step for a partner the kernel has descheduled, so any other process on the cores (the
    frontend, the agents, the worker's own Python) slows the engine many times over its CPU
    share; sleeping ones give the core away at once.
    """
    if choice == "spin":
        os.environ.pop("OMP_WAIT_POLICY", None)  # OpenMP's default: spin, later sleep
    elif choice == "sleep" or "OMP_WAIT_POLICY" not in os.environ:
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"


def engine_params(args: argparse.Namespace, slot_save_path: str) -> Any:
    """llama.cpp's server parameters for the worker's flags."""
    import xllamacpp

    # Usable cores (cgroup/affinity aware), at most 8: a small model gains nothing from more
    # and loses to thread synchronisation.
    threads = args.threads or min(8, len(os.sched_getaffinity(0)))
    params = xllamacpp.CommonParams()
    params.model.path = args.model_path
    params.n_parallel = args.parallel
    # Not unified: each slot owns n_ctx tokens, so one long prompt never starves the others.
    params.kv_unified = False
    params.n_ctx = args.n_ctx * args.parallel
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = args.threads_batch or threads
    if args.batch_size is not None:
        params.n_batch = args.batch_size
    if args.ubatch_size is not None:
        params.n_ubatch = args.ubatch_size
    params.cache_type_k = xllamacpp.ggml_type[f"GGML_TYPE_{args.cache_type_k.upper()}"]
    params.cache_type_v = xllamacpp.ggml_type[f"GGML_TYPE_{args.cache_type_v.upper()}"]
    params.flash_attn_type = xllamacpp.llama_flash_attn_type[
        f"LLAMA_FLASH_ATTN_TYPE_{FLASH_ATTN[args.flash_attn]}"
    ]
    params.cache_ram_mib = args.cache_ram_mib
    params.cache_prompt = True
    params.ctx_shift = False  # a reply that reaches the window ends there (finish "length")
    params.hostnames = ["127.0.0.1"]
    params.port = 0  # an ephemeral port, loopback only
    params.endpoint_metrics = False  # /metrics are the Dynamo frontend's
    params.endpoint_slots = True  # slot save/restore for the prefix copies (loopback only)
    params.slot_save_path = slot_save_path
    params.ui = False
    return params
