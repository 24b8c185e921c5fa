"""The Thompson policy alone (stdlib, loaded from dynamo/routers without a server)."""

import importlib.util
import sys

import pytest

from bankbench.paths import dynamo_assets


@pytest.fixture(scope="module")
def policy_mod():
    path = dynamo_assets() / "routers" / "thompson_policy.py"
    spec = importlib.util.spec_from_file_location("thompson_policy", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["thompson_policy"] = mod
    spec.loader.exec_module(mod)
    return mod


def run(policy, ttft_of, n, sessions=True):
    chosen = []
    for i in range(n):
        w, _ = policy.choose([1, 2, 3], blocks=[], session=f"s{i}" if sessions else None,
                             osl=None)
        policy.started(w, None, None)
        policy.observe_ttft(w, ttft_of[w], [])
        policy.finished(w, None)
        chosen.append(w)
    return chosen


def test_learns_to_avoid_the_slow_worker(policy_mod):
    policy = policy_mod.ThompsonPolicy(seed=1)
    chosen = run(policy, {1: 20.0, 2: 20.0, 3: 80.0}, 120)
    late = chosen[60:]
    assert late.count(3) / len(late) < 0.1
    assert policy.workers[3].mean > policy.workers[1].mean + 1.0  # ~log(4)
    assert {1, 2} <= set(late)  # the two equal workers both keep serving


def test_a_worker_that_slows_down_later_is_noticed(policy_mod):
    policy = policy_mod.ThompsonPolicy(seed=2)
    run(policy, {1: 20.0, 2: 20.0, 3: 20.0}, 90)
    late = run(policy, {1: 20.0, 2: 20.0, 3: 200.0}, 150)[75:]
    assert late.count(3) / len(late) < 0.1


def test_failures_before_first_token_push_a_worker_away(policy_mod):
    policy = policy_mod.ThompsonPolicy(seed=3)
    run(policy, {1: 20.0, 2: 20.0, 3: 20.0}, 30)
    for _ in range(10):
        policy.observe_failure(3)
    late = run(policy, {1: 20.0, 2: 20.0, 3: 20.0}, 60)
    assert late.count(3) / len(late) < 0.15


def test_prefix_overlap_and_session_pull_a_turn_to_its_worker(policy_mod):
    policy = policy_mod.ThompsonPolicy(seed=4)
    run(policy, {1: 20.0, 2: 20.0, 3: 20.0}, 30)
    prompt = list(range(400))
    blocks = policy_mod.prefix_blocks(prompt, 16)
    w, _ = policy.choose([1, 2, 3], blocks=blocks, session="agent", osl=50)
    policy.started(w, "agent", 50)
    policy.observe_ttft(w, 20.0, blocks)
    policy.finished(w, 50)
    longer = policy_mod.prefix_blocks(prompt + list(range(1000, 1100)), 16)
    picks = []
    for _ in range(20):
        again, decision = policy.choose([1, 2, 3], blocks=longer, session="agent", osl=50)
        picks.append(again)
    assert picks.count(w) >= 18
    assert decision["turn"] == 1 and decision["previous_worker"] == w
    row = next(r for r in decision["candidates"] if r["worker"] == w)
    assert row["overlap"] == pytest.approx(len(blocks) / len(longer), abs=1e-4)  # 4 places


def test_expected_output_queued_on_a_worker_spreads_new_sessions(policy_mod):
    policy = policy_mod.ThompsonPolicy(seed=5)
    run(policy, {1: 20.0, 2: 20.0, 3: 20.0}, 30)
    policy.started(1, "long", 8000)  # a long generation is running on worker 1
    picks = [policy.choose([1, 2, 3], blocks=[], session=None, osl=100)[0] for _ in range(40)]
    assert picks.count(1) <= 2


def test_no_candidate_is_a_lookup_error(policy_mod):
    policy = policy_mod.ThompsonPolicy(seed=6)
    with pytest.raises(LookupError):
        policy.choose([1], blocks=[], session=None, osl=None, exclude={1})


def test_prefix_blocks_are_chained(policy_mod):
    a = policy_mod.prefix_blocks([1] * 32, 16)
    b = policy_mod.prefix_blocks([2] * 16 + [1] * 16, 16)
    assert len(a) == 2 and a[1] != b[1]  # same second block, different prefix
    assert policy_mod.prefix_blocks([1] * 15, 16) == []  # no full block
