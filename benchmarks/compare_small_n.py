"""How often `bankbench report --compare` would call a difference that is not there, by the
number of scenarios both runs share: the false-call rate of the quality verdict rule (paired
scenario bootstrap interval excludes 0 and p < 5 %) under the null, through the same code the
report runs (`paired_cluster_bootstrap_diff_ci`, `compare.verdict`). It sets the fewest
paired scenarios below which the compare refuses to call a verdict (`MIN_PAIRED_SCENARIOS`).

Two null models, per scenario one mean per run, both runs drawn from the same distribution:
- `normal`: scenario difficulty N(0.6, 0.2) plus run noise N(0, 0.15);
- `discrete`: a TSQ-like score in {0, 1/3, 1/2, 2/3, 1} whose odds depend on the scenario.

    python benchmarks/compare_small_n.py [--sims 400]
"""

from __future__ import annotations

import argparse

import numpy as np

from analysis.compare import BETTER, WORSE, verdict
from analysis.metrics.base import paired_cluster_bootstrap_diff_ci

LEVELS = np.array([0.0, 1 / 3, 0.5, 2 / 3, 1.0])


def _draw(model: str, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    if model == "normal":
        difficulty = rng.normal(0.6, 0.2, n)
        return difficulty + rng.normal(0, 0.15, n), difficulty + rng.normal(0, 0.15, n)
    odds = rng.dirichlet(np.ones(len(LEVELS)), n)
    pick = lambda: np.array([rng.choice(LEVELS, p=p) for p in odds])  # noqa: E731
    return pick(), pick()


def false_call_rate(model: str, n: int, sims: int, seed: int = 0) -> float:
    rng = np.random.default_rng(seed)
    called = 0
    ids = np.array([f"s{i}" for i in range(n)], dtype=object)
    for sim in range(sims):
        base, other = _draw(model, n, rng)
        _, low, high, _, p = paired_cluster_bootstrap_diff_ci(base, ids, other, ids, seed=sim)
        text, _ = verdict(low, high, True)
        called += text in (BETTER, WORSE) and p < 0.05
    return called / sims


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sims", type=int, default=400)
    args = ap.parse_args()
    print(f"false 'better'/'worse' calls under the null, {args.sims} simulations per cell")
    print(f"{'scenarios':>9}  {'normal':>7}  {'discrete':>8}")
    for n in (2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 30):
        rates = [false_call_rate(m, n, args.sims) for m in ("normal", "discrete")]
        print(f"{n:>9}  {rates[0]:>7.3f}  {rates[1]:>8.3f}")


if __name__ == "__main__":
    main()
