"""The cpu-tiny worker shares a long prompt prefix across its llama.cpp slots
(dynamo/workers/llamacpp_fanout.py), on a stack of its own: fresh slots, so what each holds is
known. Real parts: the Dynamo frontend, the worker, the xllamacpp engine, SmolLM2-135M.

"Long" is the worker's --fanout-min-tokens, set low here (a ~200-token system turn against a
128-token threshold): which slots get the copy does not depend on the prompt's size, and the one
cold read costs seconds instead of the default threshold's ~2k-token ~1 min on two busy cores.
What the copy saves at the sweep's ~4.9k-token tool prompt is ./benchmark.sh's level-4 TTFT
before and after it (benchmarks/README.md)."""

from __future__ import annotations

import threading
import time

import pytest

from tests.support.cpu_tiny import SLOTS, chat, cpu_tiny_stack

pytestmark = [pytest.mark.dynamo, pytest.mark.slow]

MIN_TOKENS = 128


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    with cpu_tiny_stack(tmp_path_factory.mktemp("cpu-tiny") / "state",
                        f"--fanout-min-tokens {MIN_TOKENS} --n-ctx 1024") as state:
        yield state


def test_a_long_shared_prefix_is_copied_to_the_other_slots(stack):
    """Agents that open with the same long tool prompt: after one request has read it, requests
    started together with that prefix all find it cached, whichever slot each lands in (without
    the copy, the slots that never saw it read it cold, side by side)."""
    policy = " ".join(f"Clause {i}: the fan-out desk checks ledger {i} twice." for i in range(12))
    system = {"role": "system", "content": policy}
    first = chat(stack, messages=[system, {"role": "user", "content": "Hello."}], max_tokens=2)
    prefix = first["usage"]["prompt_tokens"] - 8  # the system turn, short of the user turn
    assert prefix > MIN_TOKENS  # long enough to be copied
    time.sleep(1.0)  # the copy runs right after the request ends (tens of ms)
    usages: dict[int, dict] = {}

    def one(i: int) -> None:
        msgs = [system, {"role": "user", "content": f"Question {i}: my balance?"}]
        usages[i] = chat(stack, messages=msgs, max_tokens=2)["usage"]

    threads = [threading.Thread(target=one, args=(i,)) for i in range(SLOTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    cached = sorted(u["prompt_tokens_details"]["cached_tokens"] for u in usages.values())
    assert cached[0] >= prefix, cached
