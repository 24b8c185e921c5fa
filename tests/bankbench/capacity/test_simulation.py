"""The simulation the decision check's error rates come from: the noise models are proper
distributions doing what their names say, runs queue as a level queues them (repeats side by
side only when the queue puts them so; passes one after another), a degradation has the true
size asked for, and a whole simulated search finds what is there."""

from __future__ import annotations

import dataclasses
import random

import pytest

from bankbench.capacity.noise_models import FAMILY, by_name
from bankbench.capacity.sim_search import found, simulate_search
from bankbench.capacity.simulate import degraded_set, run_pass, true_divergence
from contracts.capacity import CapacitySearch


def test_every_model_is_a_distribution_at_every_level():
    for model in FAMILY:
        for s in model.scenarios(random.Random(1), 40):
            for level in (1, 2, 16, 64):
                assert sum(p for _, p in s.at(level)) == pytest.approx(1.0)
            assert sum(p for _, p in s.wrong()) == pytest.approx(1.0)
            assert true_divergence(s.at(2), s.at(2)) == pytest.approx(0.0, abs=1e-12)


def test_the_models_do_what_their_names_say():
    rng = random.Random(2)
    hetero = by_name("b").scenarios(rng, 2000)
    never = sum(len(s.at(2)) == 1 for s in hetero) / len(hetero)
    assert never == pytest.approx(0.7, abs=0.04)
    growing = by_name("c").scenarios(rng, 500)
    flips = [1 - max(p for _, p in s.at(lv)) for lv in (2, 64) for s in growing]
    assert sum(flips[500:]) > 1.3 * sum(flips[:500])  # more divergence in bigger batches
    single = by_name("d").scenarios(rng, 500)
    assert sum(1 - max(p for _, p in s.at(1)) for s in single) < 0.1 * sum(
        1 - max(p for _, p in s.at(2)) for s in single)


def test_runs_queue_as_a_level_queues_them():
    model = by_name("e")  # a repeat beside another of its scenario copies it
    dists = [s.at(8) for s in model.scenarios(random.Random(3), 40)]
    rng = random.Random(4)

    def met(trials):
        by = {}
        for t in trials:
            by.setdefault(t.scenario, []).append(t)
        return sum(a.start < b.end and b.start < a.end
                   for ts in by.values() for i, a in enumerate(ts) for b in ts[i + 1:])

    assert met(run_pass(rng, model, dists, 4, 2)) == 0  # 40 places apart, 4 slots
    crowded = run_pass(rng, model, dists, 80, 2)
    assert met(crowded) == 40  # 80 slots: every trial starts at once
    always = dataclasses.replace(model, co_run_copy=1.0, lost_server=0.0, lost_harness=0.0)
    together = run_pass(rng, always, dists, 80, 2)
    assert all(a.trajectory == b.trajectory for a, b in zip(together[:40], together[40:],
                                                            strict=True))
    assert 30 <= met(run_pass(rng, model, dists, 64, 2)) <= 40  # the queue's tail is apart
    passes = run_pass(rng, model, dists, 64, 1) + run_pass(rng, model, dists, 64, 1,
                                                           first_repeat=1, t0=100.0)
    assert met(passes) == 0  # passes run one after another


def test_a_degradation_has_the_size_asked_for():
    rng = random.Random(5)
    scenarios = by_name("b").scenarios(rng, 100)
    chosen, size = degraded_set(rng, scenarios, 0.10, 2)
    assert size == pytest.approx(0.10, abs=0.005) and 5 <= len(chosen) <= 25


def test_a_simulated_search_finds_what_is_there():
    search = CapacitySearch(max_level=16)
    model = by_name("b")
    rng = random.Random(6)
    assert [simulate_search(search, model, 60, rng).capacity for _ in range(3)] == [16] * 3
    caught = simulate_search(search, model, 60, rng, drop=0.3, from_level=8)
    assert found(caught.capacity, 8) and caught.true_drop == pytest.approx(0.3, abs=0.01)
    assert any(s.verdict == "fail" for s in caught.record.steps if s.level >= 8)
