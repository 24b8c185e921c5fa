"""A cpu-tiny worker copies a long prompt to its idle slots (dynamo/workers/llamacpp_fanout.py)
and, with a prompt cache folder, keeps it across starts and restores it into its slots, for the
same engine setup only (llamacpp_prompt_cache.py). Real parts: the Dynamo frontend, the
llama.cpp worker, the xllamacpp engine, SmolLM2-135M.

One run of three fresh stacks serves both tests: the first stack (empty slots, so what each holds
is known) reads the long prompt, copies and keeps it, then takes that prefix on every slot at
once; a restart reads it back; another setup does not, and serves. A damaged file is refused by
the same check before the worker sees it (PromptCache.load returns nothing, as for another
setup): tests/engines/test_llamacpp_prompt_cache.py, a truncated state file among them.

"Long" is the worker's --fanout-min-tokens, set low here (a ~190-token system turn against a
128-token threshold, 1,024-token slots): what is copied, kept, restored and refused does not
depend on the prompt's size, and each of the two cold reads costs seconds instead of the
~1 min that the default 1,024-token threshold's ~2k-token prompt took on two busy cores. The
~4.9k-token tool prompt copied and kept for real is ./benchmark.sh's (benchmarks/README.md:
its level-4 TTFT before and after the copies, its first request with the kept prompt)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from bankbench.serve import api, llamacpp
from bankbench.serve.errors import ServeError
from bankbench.serve.state import ServerState
from tests.support.cpu_tiny import SLOTS, chat

pytestmark = [pytest.mark.dynamo, pytest.mark.slow]

MIN_TOKENS = 128
SETUP = f"--fanout-min-tokens {MIN_TOKENS} --n-ctx 1024"
OTHER_SETUP = f"--fanout-min-tokens {MIN_TOKENS} --n-ctx 2048"  # another per-slot context
POLICY = " ".join(f"Clause {i}: the keeping desk files ledger {i} in blue." for i in range(12))
SYSTEM = {"role": "system", "content": POLICY}


@dataclass
class Run:
    usage: dict  # the first request's (the long system turn)
    files: list[Path]  # the prompt cache folder's, once the worker kept the prompt
    together: list[dict]  # usages of requests sent on every slot at once afterwards


def ask(state: ServerState, who: str) -> dict:
    msgs = [SYSTEM, {"role": "user", "content": f"{who}: my balance?"}]
    return chat(state, messages=msgs, max_tokens=2)["usage"]


def run_stack(tmp_path: Path, name: str, folder: Path, setup: str = SETUP,
              together: bool = False) -> Run:
    """Start a fresh stack whose worker keeps prompts in `folder`, send one request with the long
    system turn, let the worker copy and keep it, maybe send that prefix on every slot at once,
    stop."""
    try:
        state = api.up("cpu-tiny", state_dir=tmp_path / name,
                       options={"worker_args": f"--prompt-cache-dir {folder} {setup}"})
    except ServeError as exc:
        if exc.component == llamacpp.COMPONENT:
            pytest.skip(f"the xllamacpp wheel cannot be installed here: {exc.cause}")
        raise
    usages: dict[int, dict] = {}
    try:
        usage = ask(state, name)
        # The worker copies the prompt to the idle slots right after the reply, then keeps it.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not list(folder.glob("*.json")):
            time.sleep(0.2)
        files = sorted(folder.iterdir()) if folder.exists() else []
        if together:
            def one(i: int) -> None:
                usages[i] = ask(state, f"Question {i}")

            threads = [threading.Thread(target=one, args=(i,)) for i in range(SLOTS)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
    finally:
        api.down(state)
    return Run(usage, files, list(usages.values()))


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Run]:
    tmp = tmp_path_factory.mktemp("kept-prompts")
    folder = tmp / "kept"
    out = {"first": run_stack(tmp, "first", folder, together=True)}
    out["second"] = run_stack(tmp, "second", folder)
    out["other"] = run_stack(tmp, "other", folder, OTHER_SETUP)
    return out


def prefix_of(runs: dict[str, Run]) -> int:
    prefix = runs["first"].usage["prompt_tokens"] - 12  # the system turn, short of the user's
    assert prefix > MIN_TOKENS  # long enough to be copied, hence kept
    return prefix


def cached(usage: dict) -> int:
    return usage["prompt_tokens_details"]["cached_tokens"]


def test_a_long_shared_prefix_is_copied_to_the_other_slots(runs):
    """Agents that open with the same long tool prompt: after one request has read it, requests
    started together with that prefix all find it cached, whichever slot each lands in (without
    the copy, the slots that never saw it read it cold, side by side)."""
    together = runs["first"].together
    assert len(together) == SLOTS
    assert sorted(cached(u) for u in together)[0] >= prefix_of(runs), together


def test_a_restarted_worker_reads_the_kept_prompt_and_a_different_setup_does_not(runs):
    prefix = prefix_of(runs)
    assert cached(runs["first"].usage) < prefix  # a fresh worker reads it
    assert [p.suffix for p in runs["first"].files] == [".json", ".slot"]
    assert cached(runs["second"].usage) >= prefix
    # Another per-slot context: the kept state is not for this engine, the slots start empty.
    assert cached(runs["other"].usage) < prefix
