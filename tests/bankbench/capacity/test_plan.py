"""What a design can claim: its best bound, the range of its simulated error rates over the
noise-model family, the warnings a headline carries, and `bankbench capacity --plan` without
a server."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bankbench.capacity import plan
from bankbench.capacity.noise_models import by_name
from contracts.capacity import CapacitySearch
from tests.support.cli import bankbench_here

REPO = Path(__file__).resolve().parents[3]


def test_best_bound_and_what_the_headline_must_say():
    search = CapacitySearch()
    small = plan.design(search, 14, 10)
    assert small.best_bound > search.max_divergence
    assert plan.verdict(small, 0.1).startswith("not enough scenarios to certify")
    fair = plan.design(search, 100, 12)
    assert fair.best_bound < small.best_bound / 4 and plan.verdict(fair, 0.1) is None
    assert plan.verdict(plan.design(search, 40, 12), 0.1).startswith(
        "below the validated design")


def test_family_rates_run_the_search_on_each_model():
    search = CapacitySearch(max_level=16)
    rates = plan.family_rates(search, 60, 3, models=(by_name("b"), by_name("g")))
    b, g = rates
    assert b.model == "b-heterogeneous" and 0 <= b.false_stop <= 1 and b.trials > 0
    assert set(b.detection_by_drop) == {"0.1", "0.2"}
    assert g.cliff_found is None  # its cliff (c24) is above the top: not simulated
    line = plan.model_line(b, 0.1)
    assert line.startswith(f"model b-heterogeneous: false stop rate {b.false_stop:.3f}, "
                           "detection rate ") and line.endswith("(drop 0.10 from level 12)")


def test_plan_needs_no_server():
    # In this process: what --plan prints and its refusal are asserted, not a process (the
    # range over the family below runs the CLI as a user does)
    done = bankbench_here("capacity", "--plan", "--scenarios", "14", "--max-level", "16",
                          cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert "simulating" not in done.stdout  # nothing to simulate: it cannot certify at all
    # no --slo, no --tier: the default tiers, whose bisections add levels to the alpha split
    import re

    split = re.search(r"3 tiers \(interactive, standard, batch\): .* up to (\d+) levels are "
                      r"judged \(alpha split over \d+ levels, one tier alone: (\d+)\)",
                      done.stdout)
    assert split and int(split[2]) < int(split[1]) <= 16, done.stdout
    assert f"up to {split[1]} levels judged" in done.stdout  # the design line says the same
    assert done.stdout.strip().splitlines()[-1].startswith(
        "not enough scenarios to certify a decision divergence under 0.1: 14 scenarios")
    bad = bankbench_here("capacity", "--plan", cwd=REPO)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--scenarios" in bad.stderr


def test_plan_prints_the_range_over_the_family():
    done = subprocess.run([sys.executable, "-m", "bankbench", "capacity", "--plan",
                           "--scenarios", "60", "--max-level", "8", "--plan-searches", "1"],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "over 8 noise models (1 simulated searches each): false stop " in out
    assert "model h-realistic: false stop rate" in out


def test_capacity_help_shows_only_defaults_that_say_something(capsys):
    import re

    from bankbench.cli import main

    with pytest.raises(SystemExit):
        main(["capacity", "--help"])
    text = re.sub(r"\s+", " ", capsys.readouterr().out)
    assert "(default: None)" not in text and "(default: False)" not in text
    assert "(default: 0.1)" in text and "--plan" in text and "--max-looks" in text
