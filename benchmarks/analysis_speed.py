"""How fast analysis reads a large sweep: tables + summary, then plots, at three scales.

Writes synthetic sweeps (5 levels, 10 LLM calls per trial, 40 ITL gaps per call) in Harbor's
layout under a temporary directory, then times each scale in a fresh process so peak RSS is
that scale's own. Goal: 100,000 request records → tables + summary in < 10 s and < 2 GB peak
RSS, with time and memory growing no faster than the record count.

    .venv/bin/python benchmarks/analysis_speed.py [--scales 10000 30000 100000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LEVELS = [1, 2, 4, 8, 16]
REQUESTS_PER_TRIAL = 10
ITL_PER_REQUEST = 40
GOAL_S, GOAL_RSS_MB = 10.0, 2048


def measure(sweep: Path, out: Path) -> dict[str, float]:
    """Run in a child process: time each stage, report peak RSS."""
    t0 = time.perf_counter()
    from analysis.compare import compare_table
    from analysis.report import draw_figures, write_data_files
    from analysis.summary import summarize
    from analysis.tables import load

    t_import = time.perf_counter()
    tables = load(sweep)
    t_load = time.perf_counter()
    summary = summarize(tables)
    t_summary = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    write_data_files(tables, summary, compare_table(summary), out, [sweep], None, [])
    t_files = time.perf_counter()
    draw_figures(tables, summary, out / "plots")
    t_plots = time.perf_counter()
    return {
        "requests": len(tables.requests), "trials": len(tables.trials), "itl_gaps": len(tables.itl),
        "import_s": t_import - t0, "load_s": t_load - t_import, "summary_s": t_summary - t_load,
        "tables_summary_s": t_summary - t_import, "files_s": t_files - t_summary,
        "plots_s": t_plots - t_files,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scales", type=int, nargs="+", default=[10_000, 30_000, 100_000],
                        help="request records per synthetic sweep")
    parser.add_argument("--keep", type=Path, default=None,
                        help="write the sweeps here and keep them (default: a temp dir)")
    parser.add_argument("--child", nargs=2, metavar=("SWEEP", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(Path(args.child[0]), Path(args.child[1]))))
        return 0

    from analysis.synthetic import synthetic_sweep

    root = args.keep or Path(tempfile.mkdtemp(prefix="bankbench-speed-"))
    rows = []
    for scale in args.scales:
        trials_per_level = scale // (REQUESTS_PER_TRIAL * len(LEVELS))
        sweep = root / f"sweep-{scale}"
        t = time.perf_counter()
        if not (sweep / "sweep.json").exists():
            synthetic_sweep(sweep, LEVELS, trials_per_level, REQUESTS_PER_TRIAL, ITL_PER_REQUEST)
        print(f"wrote {scale:,} records ({trials_per_level * len(LEVELS):,} trials) in "
              f"{time.perf_counter() - t:.1f} s", file=sys.stderr)
        proc = subprocess.run([sys.executable, __file__, "--child", str(sweep),
                               str(root / f"report-{scale}")],
                              capture_output=True, text=True, check=True)
        rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    header = (f"{'requests':>9} {'trials':>7} {'gaps':>9} {'load s':>7} {'summary s':>9} "
              f"{'tables+summary s':>16} {'files s':>7} {'plots s':>7} {'peak RSS MB':>11}")
    print(header)
    for r in rows:
        print(f"{r['requests']:>9,} {r['trials']:>7,} {r['itl_gaps']:>9,} {r['load_s']:>7.2f} "
              f"{r['summary_s']:>9.2f} {r['tables_summary_s']:>16.2f} {r['files_s']:>7.2f} "
              f"{r['plots_s']:>7.2f} {r['peak_rss_mb']:>11.0f}")
    first, last = rows[0], rows[-1]
    growth = last["requests"] / first["requests"]
    print(f"\nx{growth:.0f} records: tables+summary time x"
          f"{last['tables_summary_s'] / first['tables_summary_s']:.1f}, peak RSS x"
          f"{last['peak_rss_mb'] / first['peak_rss_mb']:.1f}")
    ok = last["tables_summary_s"] < GOAL_S and last["peak_rss_mb"] < GOAL_RSS_MB
    print(f"goal at {last['requests']:,} records (< {GOAL_S:.0f} s, < {GOAL_RSS_MB} MB): "
          f"{'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
