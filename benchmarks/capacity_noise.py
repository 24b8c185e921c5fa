"""Error rates of the capacity search, by simulation through the code the search runs: the
search loop with sequential repeats (bankbench/capacity/sequential.py), the level order
(search.py), the checks and the decision statistic (checks.py, analysis/decision_noise.py), on
runs drawn from each model of a family of noise models (bankbench/capacity/noise_models.py:
(a) the legacy model ... (h) a realistic mix) queued as a level queues them.

    .venv/bin/python benchmarks/capacity_noise.py                     # recommended design
    .venv/bin/python benchmarks/capacity_noise.py --scenarios 50 --searches 200
    .venv/bin/python benchmarks/capacity_noise.py --held-out          # the held-out models
    .venv/bin/python benchmarks/capacity_noise.py --tiers --searches 100  # two SLO tiers

Per model, from --searches simulated searches each over levels 1..--max-level:

    model <name>: false stop rate X, detection rate Y (drop 0.10 from level 12)
    model <name>: detection rate Y (drop 0.20 from level 12)
    model <name>: cliff found rate Z                                  (latency-cliff models)

A false stop is a search with nothing degraded that ends below the top level. A degradation
switches a share of scenarios to a wrong trajectory from level 12 up, sized so that its true
divergence from the reference is the drop; detection counts a search whose capacity lies within
one doubling below that level (6..11) — a stop further below is not a detection. The worst
case over the models is printed first. One search per run is also made through real Harbor job
directories, written to disk and judged by the product's reader (bankbench/capacity/run.py ·
Evaluation), and must reach the same steps as the same search judged in memory.

`--tiers`: the same searches with two SLO tiers judged from one climb (a strict latency tier
whose bound the simulated latency crosses near c40, and a loose one; bankbench/capacity/
sim_tiers.py), per tier and model:

    tier <tier> model <name>: false stop rate X, detection rate Y (drop 0.10), Z (drop 0.20)

a false stop being a tier's capacity more than one doubling below where its own bound is
crossed (below the top when it never is); the worst case over tiers and models first.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
for path in (REPO, REPO / "benchmarks"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from harbor.models.trial.paths import TrialPaths  # noqa: E402

from analysis.job_paths import is_job_dir  # noqa: E402
from analysis.synthetic import record, write_job, write_sweep_manifest, write_trial  # noqa: E402
from bankbench.capacity import plan  # noqa: E402
from bankbench.capacity.noise_models import FAMILY, by_name  # noqa: E402
from bankbench.capacity.run import Evaluation  # noqa: E402
from bankbench.capacity.search import levels_judgeable  # noqa: E402
from bankbench.capacity.sequential import look_confidence  # noqa: E402
from bankbench.capacity.sim_search import CEILING, SimulatedSource, simulate_search  # noqa: E402
from bankbench.capacity.simulate import SIM_SLO  # noqa: E402
from contracts.capacity import CapacitySearch, CapacityStep  # noqa: E402
from contracts.intents import INTENTS_FILE  # noqa: E402
from contracts.sweep import level_dir  # noqa: E402

T0 = 1_767_225_600.0  # 2026-01-01 UTC: simulated time 0
SECONDS = 30.0  # one unit of simulated trial time
PASS_GAP_S = 3600.0


class JobDirSource(SimulatedSource):
    """The simulated runs written as Harbor job directories (one trial folder per run, its
    calls in the verifier's record, its times in result.json, lost trials as the agent
    reports them) and judged by the product's reader."""

    def __init__(self, *args, root: Path, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.root = root
        self.passes: dict[int, int] = {}
        write_sweep_manifest(root, [1])

    def ensure(self, level: int, repeats: int) -> None:
        before = len(self.trials.get(level, []))
        super().ensure(level, repeats)
        job = level_dir(self.root, level)
        if not is_job_dir(job):
            write_job(job, level)
        # each pass its own run, an hour after the one before (as the level runner records
        # them), so no pass's drain and the next one's warm-up are measured
        passes = self.passes[level] = self.passes.get(level, -1) + 1
        for trial in self.trials[level][before:]:
            self._write(job, level, trial, passes * PASS_GAP_S)

    def _write(self, job: Path, level: int, trial, offset: float) -> None:
        from datetime import UTC, datetime

        sid = f"s{trial.scenario:03d}"
        name = f"{sid}__r{trial.repeat}"
        at = T0 + offset + trial.start * SECONDS
        start = datetime.fromtimestamp(at, UTC)
        length = (trial.end - trial.start) * SECONDS
        status = {None: "ok", "server": "infra_error", "harness": "harness_error"}[trial.lost]
        rewards = {"tsq": 1.0}
        done = write_trial(job, name, scenario_id=sid, started_at=start,
                           phase_s=(0.0, 0.0, length, 0.0), rewards=rewards,
                           records=[record(trial_name=name, scenario_id=sid,
                                           ttft_ms=self.latency[level], e2e_ms=1000.0,
                                           start_unix_ns=int(at * 1e9) + 1)],
                           agent_status={"status": status, "reason": trial.lost,
                                         "attempts": 1})
        calls = [{"seq": i, "attempt": 1, "tool": tool, "arguments": {}, "valid": True,
                  "ts": 0.0} for i, tool in enumerate(trial.trajectory or (), start=1)]
        (TrialPaths(done).verifier_dir / INTENTS_FILE).write_text(
            "".join(json.dumps(c) + "\n" for c in calls))

    def judge(self, level: int, phase: str, confidence: tuple[float, float]) -> CapacityStep:
        evaluation = Evaluation(self.root, self.search, None, self.reference_level)
        return evaluation.step(self.search, level, phase, confidence,
                               f"c{self.reference_level}", False, 0.0)


def through_job_dirs(search: CapacitySearch, n_scenarios: int, root: Path, seed: int
                     ) -> str:
    """One search of the realistic model with a degradation of twice the margin (levels up
    to 32: every trial is a folder on disk, read back at every look), judged from job
    directories and in memory on the same draws: the two must take the same steps."""
    model = by_name("h")
    search = search.model_copy(update={"max_level": min(search.max_level, 32)})
    drop = 2 * search.max_divergence
    on_disk = simulate_search(search, model, n_scenarios, random.Random(seed), drop=drop,
                              from_level=plan.DETECT_FROM, source_type=JobDirSource,
                              root=root)
    in_memory = simulate_search(search, model, n_scenarios, random.Random(seed), drop=drop,
                                from_level=plan.DETECT_FROM)

    def steps(out):
        return [(s.level, s.verdict, s.repeats) for s in out.record.steps]

    same = steps(on_disk) == steps(in_memory)
    trials = sum(1 for _ in root.glob("c*/*/result.json"))
    return (f"job directories: one search of {model.name} (drop {drop:g} from "
            f"c{plan.DETECT_FROM}, levels 1..{search.max_level}) written to disk "
            f"({trials} trials) and judged by the product's reader: capacity "
            f"{on_disk.capacity}, steps {'identical to' if same else 'DIFFERENT FROM'} the "
            f"in-memory search ({steps(on_disk)})")


def tiers(search: CapacitySearch, args: argparse.Namespace, models: tuple) -> int:
    """Per tier and model: false stop and detection of a search with two SLO tiers."""
    from bankbench.capacity.sim_tiers import TIERS, tier_rates

    k = levels_judgeable(search, CEILING)
    print(f"tiers: {', '.join(f'{t.name} ({t.slos or SIM_SLO})' for t in TIERS)}; "
          f"K={k} levels for the alpha split (one tier: "
          f"{levels_judgeable(search.model_copy(update={'tiers': []}), CEILING)})",
          flush=True)
    t0 = time.perf_counter_ns()
    rows = tier_rates(search, args.scenarios, args.searches, models=models, seed=args.seed,
                      workers=args.workers)
    wall = (time.perf_counter_ns() - t0) / 1e9
    stops = [(r["false_stop"], f"{r['tier']}, {r['model']}") for r in rows]
    drop = f"{search.max_divergence:g}"
    found = [(r["detection"][drop], f"{r['tier']}, {r['model']}") for r in rows
             if drop in r["detection"]]
    print(f"worst case over tiers and models: false stop {max(stops)[0]:.3f} "
          f"({max(stops)[1]})" + (f", detection {min(found)[0]:.3f} at drop {drop} "
                                  f"({min(found)[1]})" if found else ""))
    for r in rows:
        detection = ", ".join(f"{v:.3f} (drop {d})" for d, v in r["detection"].items())
        print(f"tier {r['tier']} model {r['model']}: false stop rate {r['false_stop']:.3f}"
              + (f", detection rate {detection}" if detection else ""))
    print(f"wall {wall:.0f} s for the simulated searches ({args.workers} workers)")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--searches", type=int, default=500, help="per model and condition")
    ap.add_argument("--scenarios", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--max-looks", type=int, default=3)
    ap.add_argument("--max-level", type=int, default=64)
    ap.add_argument("--models", help="comma list of names (default: the family)")
    ap.add_argument("--held-out", action="store_true",
                    help="the held-out models (benchmarks/capacity_heldout_models.py) instead")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--job-dirs", metavar="DIR",
                    help="keep the job directories of the on-disk search here")
    ap.add_argument("--tiers", action="store_true",
                    help="per-tier rates of a search with two SLO tiers instead")
    args = ap.parse_args()

    from capacity_heldout_models import HELD_OUT

    pool = HELD_OUT if args.held_out else FAMILY
    models = tuple(by_name(n, pool) for n in args.models.split(",")) if args.models else pool
    search = CapacitySearch(repeats=args.repeats, max_looks=args.max_looks,
                            max_level=args.max_level)
    where = ("held-out models benchmarks/capacity_heldout_models.py" if args.held_out
             else "family bankbench/capacity/noise_models.py")
    if args.tiers:  # the design line with the tiers' K
        from bankbench.capacity.sim_tiers import TIERS

        search = search.model_copy(update={"tiers": list(TIERS)})
    k = levels_judgeable(search, CEILING)
    passing, stopping = look_confidence(search.alpha, k, search.max_looks)
    print(f"design: {args.scenarios} scenarios x {args.repeats} repeats per level (doubled "
          f"when inconclusive, up to {args.max_looks} looks), reference "
          f"c{search.reference_level}, --max-divergence {search.max_divergence:g}, alpha "
          f"{search.alpha:g}: a look passes at confidence {passing:.5f} (K={k} levels x "
          f"{args.max_looks} looks), shows degraded at {stopping:.4f}; levels 1..{args.max_level};"
          f" {args.searches} searches per model and condition; {where}", flush=True)
    if args.tiers:
        return tiers(search, args, models)
    t0 = time.perf_counter_ns()
    rates = plan.family_rates(search, args.scenarios, args.searches, models=models,
                              seed=args.seed, workers=args.workers)
    wall = (time.perf_counter_ns() - t0) / 1e9
    margin, double = f"{search.max_divergence:g}", f"{2 * search.max_divergence:g}"
    stops = [(m.false_stop, m.model) for m in rates if m.false_stop is not None]
    found = {d: [(m.detection_by_drop[d], m.model) for m in rates if d in m.detection_by_drop]
             for d in (margin, double)}
    cliffs = [(m.cliff_found, m.model) for m in rates if m.cliff_found is not None]
    worst = [f"false stop {max(stops)[0]:.3f} ({max(stops)[1]})" if stops else ""]
    worst += [f"detection {min(v)[0]:.3f} at drop {d} ({min(v)[1]})"
              for d, v in found.items() if v]
    worst += [f"cliff found {min(cliffs)[0]:.3f} ({min(cliffs)[1]})"] if cliffs else []
    print("worst case: " + ", ".join(w for w in worst if w))
    for m in rates:
        print(plan.model_line(m, search.max_divergence))
        if double in m.detection_by_drop:
            print(f"model {m.model}: detection rate {m.detection_by_drop[double]:.3f} (drop "
                  f"{2 * search.max_divergence:.2f} from level {plan.DETECT_FROM})")
    for m in rates:
        print(f"  {m.model}: trials per search {m.trials:.0f} (nothing degraded), searches "
              f"reporting an inconclusive level {m.inconclusive:.3f}")
    root = Path(args.job_dirs) if args.job_dirs else Path(tempfile.mkdtemp(prefix="capnoise-"))
    try:
        print(through_job_dirs(search, args.scenarios, root / "sweep", args.seed))
    finally:
        if not args.job_dirs:
            shutil.rmtree(root, ignore_errors=True)
    print(f"wall {wall:.0f} s for the simulated searches ({args.workers} workers)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
