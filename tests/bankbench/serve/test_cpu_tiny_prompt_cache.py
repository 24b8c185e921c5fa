"""A cpu-tiny worker with a prompt cache folder keeps a long prompt's KV across starts and
restores it into its slots, for the same engine setup only. Real parts: the Dynamo frontend, the
llama.cpp worker, the xllamacpp engine, SmolLM2-135M.

"Long" is the worker's --fanout-min-tokens, set low here (a ~190-token system turn against a
128-token threshold, 1,024-token slots): what is kept, restored and refused does not depend on the
prompt's size, and each of the three cold reads costs seconds instead of the ~1 min that the
default 1,024-token threshold's ~2k-token prompt took on two busy cores. The ~4.9k-token tool
prompt kept and restored for real is ./benchmark.sh's (docs/cpu-tiny.md)."""

from __future__ import annotations

import time

import pytest

from bankbench.serve import api, llamacpp
from bankbench.serve.errors import ServeError
from tests.support.cpu_tiny import chat

pytestmark = [pytest.mark.dynamo, pytest.mark.slow]

MIN_TOKENS = 128
SETUP = f"--fanout-min-tokens {MIN_TOKENS} --n-ctx 1024"
POLICY = " ".join(f"Clause {i}: the keeping desk files ledger {i} in blue." for i in range(12))
SYSTEM = {"role": "system", "content": POLICY}


def first_usage(tmp_path, name: str, folder, setup: str = SETUP) -> tuple[dict, list]:
    """Start a fresh stack whose worker keeps prompts in `folder`, send one request with the long
    system turn, let the worker keep it, stop; the usage and the folder's files."""
    try:
        state = api.up("cpu-tiny", state_dir=tmp_path / name,
                       options={"worker_args": f"--prompt-cache-dir {folder} {setup}"})
    except ServeError as exc:
        if exc.component == llamacpp.COMPONENT:
            pytest.skip(f"the xllamacpp wheel cannot be installed here: {exc.cause}")
        raise
    try:
        msgs = [SYSTEM, {"role": "user", "content": f"{name}: my balance?"}]
        usage = chat(state, messages=msgs, max_tokens=2)["usage"]
        deadline = time.monotonic() + 30  # the worker keeps the prompt right after the reply
        while time.monotonic() < deadline and not list(folder.glob("*.json")):
            time.sleep(0.2)
    finally:
        api.down(state)
    return usage, sorted(folder.iterdir()) if folder.exists() else []


def test_a_restarted_worker_reads_the_kept_prompt_and_a_different_setup_does_not(tmp_path):
    folder = tmp_path / "kept"
    cold, files = first_usage(tmp_path, "first", folder)
    prefix = cold["prompt_tokens"] - 12  # the system turn, short of the user turn
    assert prefix > MIN_TOKENS  # long enough to be copied, hence kept
    assert cold["prompt_tokens_details"]["cached_tokens"] < prefix  # a fresh worker reads it
    assert [p.suffix for p in files] == [".json", ".slot"]

    warm, _ = first_usage(tmp_path, "second", folder)
    assert warm["prompt_tokens_details"]["cached_tokens"] >= prefix

    # Another per-slot context: the kept state is not for this engine, the slots start empty.
    other, _ = first_usage(tmp_path, "other", folder, f"--fanout-min-tokens {MIN_TOKENS} "
                                                      "--n-ctx 2048")
    assert other["prompt_tokens_details"]["cached_tokens"] < prefix

    # A damaged state file is skipped (the worker starts and serves), never restored.
    for path in folder.glob("*.slot"):
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    damaged, _ = first_usage(tmp_path, "damaged", folder)
    assert damaged["prompt_tokens_details"]["cached_tokens"] < prefix
