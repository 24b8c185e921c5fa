"""The design's figures: the noise model hits the floor and drop it is given, the simulated
power behaves (more scenarios, more power; a big drop always caught), `bankbench capacity
--plan` runs without a server, and the simulated search (benchmarks/capacity_noise.py) runs
the product's judging code."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

from analysis.consistency import tool_f1
from analysis.decision_noise import pair_mean, per_level_confidence
from bankbench.capacity import plan
from contracts.capacity import CapacitySearch

REPO = Path(__file__).resolve().parents[3]


def test_noise_model_hits_its_floor_and_drop():
    model = plan.NoiseModel(0.9)
    rng = random.Random(3)
    scenarios = plan.draw_scenarios(rng, 3000, model.divergence)
    ref = plan.draw_level(rng, scenarios, 2)
    floor = sum(pair_mean(r, None, tool_f1) for r in ref.values()) / len(ref)
    assert floor == pytest.approx(0.9, abs=0.01)
    worse = plan.draw_level(rng, scenarios, 2, model.extra_for_drop(0.1))
    across = sum(pair_mean(worse[s], ref[s], tool_f1) for s in ref) / len(ref)
    assert floor - across == pytest.approx(0.1, abs=0.015)
    assert plan.NoiseModel(1.0).divergence == 0.0


def test_power_grows_with_scenarios_and_a_big_drop_is_caught():
    search = CapacitySearch(repeats=2)
    confidence = per_level_confidence(0.05, 10)
    small = plan.pass_rate(search, 20, 0.95, 0.0, confidence, sims=60)
    large = plan.pass_rate(search, 80, 0.95, 0.0, confidence, sims=60)
    assert small < 0.5 < large
    assert plan.pass_rate(search, 80, 0.95, 0.3, confidence, sims=60) == 0.0


def test_plan_needs_no_server():
    done = subprocess.run([sys.executable, "-m", "bankbench", "capacity", "--plan",
                           "--scenarios", "14", "--max-level", "16"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "floor 0.950 (assumed" in done.stdout
    assert done.stdout.strip().splitlines()[-1].startswith(
        "not enough scenarios to certify a decision drop under 0.1: 14 scenarios")
    bad = subprocess.run([sys.executable, "-m", "bankbench", "capacity", "--plan"],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--scenarios" in bad.stderr


def test_simulated_search_uses_the_product_judge():
    sys.path.insert(0, str(REPO / "benchmarks"))
    import capacity_noise

    search = CapacitySearch(repeats=3, max_level=16)
    # no noise at all and 60 scenarios: every search reaches the top
    assert capacity_noise.run(search, 20, 60, 1.0, 0.0, 16, seed=1)[0] == 0.0
    # a 30-point drop from level 4: every search stops below it
    assert capacity_noise.run(search, 20, 60, 0.95, 0.3, 4, seed=2)[0] == 1.0


def test_plan_reads_its_floor_from_a_pilot(tmp_path):
    from tests.analysis.test_consistency import BAL, FREEZE, XFER, _sweep

    one, other = [BAL, XFER], [BAL, FREEZE]
    pilot = _sweep(tmp_path / "pilot", {1: {
        "banking-000__a": {"calls": one}, "banking-000__b": {"calls": one},
        "banking-001__a": {"calls": one}, "banking-001__b": {"calls": other}}})
    done = subprocess.run([sys.executable, "-m", "bankbench", "capacity", "--plan",
                           "--scenarios", "60", "--max-level", "8", "--pilot", str(pilot)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"floor 0.750 (measured in {pilot})")
    empty = _sweep(tmp_path / "silent", {1: {"banking-000__a": {"calls": []},
                                             "banking-000__b": {"calls": []}}})
    bad = subprocess.run([sys.executable, "-m", "bankbench", "capacity", "--plan",
                          "--scenarios", "60", "--pilot", str(empty)],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "no scenario with 2 repeats that called tools" in bad.stderr


def test_capacity_help_shows_only_defaults_that_say_something(capsys):
    import re

    from bankbench.cli import main

    with pytest.raises(SystemExit):
        main(["capacity", "--help"])
    text = re.sub(r"\s+", " ", capsys.readouterr().out)
    assert "(default: None)" not in text and "(default: False)" not in text
    assert "(default: 0.1)" in text and "--plan" in text
