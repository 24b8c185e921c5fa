"""Latency verdicts judged on whole runs: several runs per side (5 or more), run in pairs of
one run of each side, compared by Welch's t over the runs' own figures and the crossover's test
over the pairs, both to call it; fewer runs on a side, runs back to back or not in pairs, or
every pair in one order, say they cannot tell; `bankbench report a1,a2 --compare b1,b2` groups
runs into sides."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from analysis.compare import (
    BACK_TO_BACK,
    CANNOT_TELL,
    FEW_RUNS,
    NOT_PAIRED,
    ONE_RUN,
    SAME_ORDER,
    UNCLEAR,
    WORSE,
    compare_table,
)
from analysis.metrics.between_runs import (
    crossover_effect_p,
    crossover_test,
    effect_p,
    in_pairs,
    interleaved,
    run_t_test,
)
from analysis.metrics.student_t import t_two_sided
from bankbench.cli import main
from tests.support import quality_jobs


def test_the_t_test_over_runs_on_a_known_answer():
    base, other = np.exp([0.0, 0.1, 0.2]), np.exp([0.3, 0.4, 0.5])
    # each side's variance of its mean 0.01 / 3; Satterthwaite's df (2v)^2 / (2 v^2 / 2) = 4
    t = 0.3 / math.sqrt(0.02 / 3)
    p, lean, df = run_t_test(base, other)
    assert p == pytest.approx(t_two_sided(t, 4)) and lean == 1.0 and df == 4
    assert run_t_test(other, base)[1] == -1.0
    assert effect_p(base, base, 1.5) == pytest.approx(t_two_sided(math.log(1.5) / math.sqrt(
        0.02 / 3), 4))
    # one side four times as spread: fewer degrees of freedom, rounded down
    spread = np.exp([0.0, 0.4, 0.8])
    assert run_t_test(base, spread)[2] == 2
    assert np.isnan(run_t_test(base[:1], other)[0])  # one run on a side: no test
    assert run_t_test(base, base)[0] == 1.0


def test_one_outlying_run_cannot_make_a_difference_alone():
    """One run up to 100x slower among five: its side's spread grows with its mean, so |t|
    is 1 when the other runs agree, and about 1 when they scatter a little."""
    for size in (2.0, 10.0, 100.0):
        slow = np.array([1.0, 1.0, 1.0, 1.0, size])
        p, _, df = run_t_test(np.ones(5), slow)
        assert p == pytest.approx(t_two_sided(1.0, df))
        jitter = np.exp([0.0, 0.01, -0.01, 0.02, -0.02])
        p, _, df = run_t_test(jitter, slow * jitter)
        assert p >= t_two_sided(1.1, df)


def test_interleaved_runs_and_runs_back_to_back():
    def order(text: str) -> bool | None:
        starts = {side: [i for i, s in enumerate(text) if s == side] for side in "ab"}
        return interleaved(np.array(starts["a"], float), np.array(starts["b"], float))

    assert order("abab") and order("abba") and order("abbaab") and order("ababa")
    assert not order("aabb") and not order("aaabbb") and not order("aaab")
    assert interleaved(np.zeros(2), np.zeros(2)) is None  # no start times
    assert interleaved(np.array([0.0, np.nan]), np.array([1.0, 2.0])) is None


def _starts(order: str) -> tuple[np.ndarray, np.ndarray]:
    return tuple(np.array([i for i, s in enumerate(order) if s == side], float) for side in "ab")


def test_runs_fall_into_pairs_of_one_run_of_each_side():
    pairs = in_pairs(*_starts("abbaab"))
    # indices into (a runs..., b runs...): a1 a2 a3 are 0 1 2, b1 b2 b3 are 3 4 5
    assert pairs.tolist() == [[0, 3], [4, 1], [2, 5]]
    assert in_pairs(*_starts("aabbab")) is None  # a pair of two a runs
    assert in_pairs(*_starts("abbab")) is None  # an odd run out
    assert in_pairs(np.array([0.0, np.nan]), np.array([1.0, 2.0])) is None


def test_the_crossover_test_on_a_known_answer():
    """Three pairs b-first, two a-first. Per pair, first minus second log figure: b-first
    0.5, 0.7, 0.6 (mean 0.6), a-first -0.1, 0.1 (mean 0): the side difference is (0.6 - 0) / 2
    = 0.3, the place effect (0.6 + 0) / 2; pooled variance of the differences (0.02 + 0.02) /
    3, so se = sqrt(0.04 / 3 * (1/3 + 1/2)) / 2, 3 degrees of freedom."""
    order = "baabbaabba"  # pairs: ba ab ba ab ba
    first_minus_second = {0: 0.5, 1: -0.1, 2: 0.7, 3: 0.1, 4: 0.6}
    logs = np.zeros(10)
    for pair, w in first_minus_second.items():
        logs[2 * pair] = w  # second run of each pair at 0
    a = np.exp([logs[i] for i, s in enumerate(order) if s == "a"])
    b = np.exp([logs[i] for i, s in enumerate(order) if s == "b"])
    figures, pairs = np.concatenate([a, b]), in_pairs(*_starts(order))
    se = math.sqrt(0.04 / 3 * (1 / 3 + 1 / 2)) / 2
    p, lean = crossover_test(figures, pairs, 5)
    assert p == pytest.approx(t_two_sided(0.3 / se, 3)) and lean == 1.0
    assert crossover_effect_p(figures, pairs, 5, 1.5) == pytest.approx(
        t_two_sided(math.log(1.5) / se, 3))
    # every pair in one order: place and side cannot be told apart
    same = in_pairs(*_starts("ab" * 5))
    assert np.isnan(crossover_test(np.exp(np.arange(10.0) / 10), same, 5)[0])


def _side(name: str, runs: int, offsets: list[float], positions: list[int], slower: float = 1.0,
          seed: int = 0) -> tuple[list[dict], list[dict]]:
    """`runs` runs of 20 scenarios, one trial each, 3 calls; run r `offsets[r]` times slower
    (the server's speed that run), starting at running position `positions[r]`."""
    rng = np.random.default_rng(seed)
    summary, requests = [], []
    for r in range(runs):
        source = f"{name}{r + 1}"
        rows = [{"source": source, "level": 1, "scenario_id": f"s{i:02d}",
                 "trial": f"{source}-{i}", "measured": True, "ok": True,
                 "start_unix_ns": (positions[r] * 1000 + 3 * i + j) * 10 ** 9,
                 "ttft_ms": 20.0 * (i + 1) * offsets[r] * slower * rng.lognormal(0, 0.05),
                 "failed": False}
                for i in range(20) for j in range(3)]
        requests += rows
        summary.append({"source": source, "level": 1,
                        "ttft_ms_p50": float(np.median([x["ttft_ms"] for x in rows])),
                        "error_rate": 0.0})
    return summary, requests


def _compare(a, b, sides=True) -> pd.Series:
    summary = pd.DataFrame(a[0] + b[0])
    requests = pd.DataFrame(a[1] + b[1])
    names = {s: s[0] for s in summary["source"]} if sides else None
    return compare_table(summary, None, requests, keys=("ttft_ms_p50", "error_rate"),
                         sides=names).set_index("metric")


A_FIRST, B_FIRST = [0, 3, 4, 7, 8], [1, 2, 5, 6, 9]  # A B B A A B B A A B
STEADY = [1.0, 1.02, 0.98, 1.01, 0.99]


def test_a_clear_slowdown_over_interleaved_runs_is_called():
    rows = _compare(_side("a", 5, STEADY, A_FIRST, seed=1),
                    _side("b", 5, STEADY, B_FIRST, slower=1.5, seed=2))
    assert rows.at["ttft_ms_p50", "verdict"] == WORSE
    assert rows.at["ttft_ms_p50", "runs"] == "5 vs 5" and rows.at["ttft_ms_p50", "source"] == "b"
    # the side's figure is its runs' mean
    assert rows.at["ttft_ms_p50", "value"] > 1.4 * rows.at["ttft_ms_p50", "baseline"]


def test_a_server_that_drifts_between_runs_is_not_called_different():
    """Identical server, its speed moving from run to run by up to 2x: one pair of its runs
    would differ by 30 %; over the runs of both sides, no difference is called, and a 1.5x
    slowdown would not have been called either: the row says it cannot tell."""
    a = _side("a", 5, [1.0, 1.3, 0.8, 1.6, 0.7], A_FIRST, seed=3)
    b = _side("b", 5, [1.3, 0.9, 1.15, 0.75, 1.5], B_FIRST, seed=4)
    rows = _compare(a, b)
    assert rows.at["ttft_ms_p50", "verdict"] in (UNCLEAR, CANNOT_TELL)
    assert "spread as widely" in rows.at["ttft_ms_p50", "power_note"]


def test_one_run_a_side_or_runs_back_to_back_get_no_latency_verdict():
    one = _compare(_side("a", 1, [1.0], [0], seed=5), _side("b", 1, [1.0], [1], 1.5, seed=6))
    assert one.at["ttft_ms_p50", "verdict"] == CANNOT_TELL
    assert one.at["ttft_ms_p50", "power_note"] == f"cannot tell: {ONE_RUN}"
    assert not np.isnan(one.at["ttft_ms_p50", "delta_ci_low"])  # the scale is still shown
    few = _compare(_side("a", 3, STEADY, [0, 3, 4], seed=5),
                   _side("b", 3, STEADY, [1, 2, 5], 1.5, seed=6))
    assert few.at["ttft_ms_p50", "power_note"] == f"cannot tell: {FEW_RUNS}"
    back = _compare(_side("a", 5, STEADY, [0, 1, 2, 3, 4], seed=7),
                    _side("b", 5, STEADY, [5, 6, 7, 8, 9], 1.5, seed=8))
    assert back.at["ttft_ms_p50", "verdict"] == CANNOT_TELL
    assert back.at["ttft_ms_p50", "power_note"] == f"cannot tell: {BACK_TO_BACK}"
    # a share keeps its own test over the sides' pooled trials
    assert back.at["error_rate", "verdict"] == UNCLEAR


def test_runs_slower_in_their_pair_s_second_place_are_not_a_difference():
    """A server whose second run of each pair is 1.6x slower (a compaction every other run,
    two replicas in turn). Every pair a then b: side b got every slow run, which Welch's t over
    the runs calls worse; the rule says it cannot tell a run's place from its side. Pairs in
    both orders: no difference; and a real 1.5x slowdown of b on that server is still called."""
    place = [1.0, 1.6] * 5
    alike = "ab" * 5
    a_at, b_at = ([i for i, s in enumerate(alike) if s == side] for side in "ab")
    rows = _compare(_side("a", 5, [place[i] for i in a_at], a_at, seed=11),
                    _side("b", 5, [place[i] for i in b_at], b_at, seed=12))
    assert rows.at["ttft_ms_p50", "verdict"] == CANNOT_TELL
    assert rows.at["ttft_ms_p50", "power_note"] == f"cannot tell: {SAME_ORDER}"
    assert run_t_test(*(np.array([place[i] for i in at]) for at in (a_at, b_at)))[0] < 1e-6
    offsets = [p * s for p, s in zip(place, [1.0, 1.02, 0.98, 1.01, 0.99] * 2, strict=True)]
    a = [offsets[i] for i in A_FIRST]
    b = [offsets[i] for i in B_FIRST]
    same = _compare(_side("a", 5, a, A_FIRST, seed=13), _side("b", 5, b, B_FIRST, seed=14))
    assert same.at["ttft_ms_p50", "verdict"] in (UNCLEAR, CANNOT_TELL)
    slower = _compare(_side("a", 5, a, A_FIRST, seed=13),
                      _side("b", 5, b, B_FIRST, slower=1.5, seed=14))
    assert slower.at["ttft_ms_p50", "verdict"] == WORSE


def test_runs_not_in_pairs_get_no_latency_verdict():
    """a a b b a b b a a b: interleaved on the whole, but its first pair is two a runs."""
    order = "aabbabbaab"
    a_at, b_at = ([i for i, s in enumerate(order) if s == side] for side in "ab")
    rows = _compare(_side("a", 5, STEADY, a_at, seed=15),
                    _side("b", 5, STEADY, b_at, slower=1.5, seed=16))
    assert rows.at["ttft_ms_p50", "power_note"] == f"cannot tell: {NOT_PAIRED}"


def _job(job_dir, start_s: int, slower: float, seed: int):
    """24 scenarios, one trial each at concurrency 1, 3 calls of 20-480 ms, each `slower`
    times slower; its calls start from `start_s`."""
    from analysis.synthetic import record, write_job, write_trial

    rng = np.random.default_rng(seed)
    write_job(job_dir, 1, n_total_trials=24)
    for i in range(24):
        scenario = f"banking-{i:03d}"
        calls = [record(request_id=f"{i}-{n}", scenario_id=scenario,
                        start_unix_ns=(start_s + 10 * i + n) * 10 ** 9,
                        ttft_ms=20.0 * (i + 1) * rng.lognormal(0, 0.1) * slower,
                        e2e_ms=400.0 * slower, completion_tokens=3)
                 for n in range(3)]
        write_trial(job_dir, f"{scenario}__0", scenario_id=scenario, records=calls,
                    rewards=quality_jobs.rewards(1.0), agent_status=quality_jobs.OK)
    return job_dir


def test_the_cli_takes_runs_joined_by_commas(tmp_path, capsys):
    """Five runs a side, interleaved (A B B A A B B A A B): the slower side is called worse on
    latency; the report shows the runs per side and writes the sides' rows."""
    order = "abbaabbaab"
    names = [f"{side}{order[:i + 1].count(side)}" for i, side in enumerate(order)]
    runs = {name: _job(tmp_path / name, 1000 * i, 1.5 if name[0] == "b" else 1.0, i)
            for i, name in enumerate(names)}
    out = tmp_path / "r"
    assert main(["report", ",".join(str(runs[f"a{i}"]) for i in range(1, 6)), "--compare",
                 ",".join(str(runs[f"b{i}"]) for i in range(1, 6)), "--out", str(out),
                 "--no-plots"]) == 0
    rows = pd.DataFrame(json.loads((out / "summary.json").read_text())["comparison"])
    row = rows[rows["metric"] == "ttft_ms_p50"].iloc[0]
    assert row["verdict"] == "worse" and row["runs"] == "5 vs 5"
    assert row["source"] == "b1+b2+b3+b4+b5"
    text = (out / "report.md").read_text()
    assert "## Comparison against a1+a2+a3+a4+a5" in text and "| runs |" in text
    capsys.readouterr()
    # one run a side: the delta, no latency verdict
    assert main(["report", str(runs["a1"]), "--compare", str(runs["b1"]), "--out",
                 str(tmp_path / "one"), "--no-plots"]) == 0
    rows = pd.DataFrame(json.loads((tmp_path / "one" / "summary.json").read_text())
                        ["comparison"])
    row = rows[rows["metric"] == "ttft_ms_p50"].iloc[0]
    assert row["verdict"] == "cannot tell" and row["delta"] > 0
