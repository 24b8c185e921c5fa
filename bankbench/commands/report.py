"""`bankbench report`: tables, metrics, plots and report.md for a job or a sweep."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help="Summarise a Harbor job or a sweep: latency, throughput, TSQ, plots, report.md.",
        description=(
            "Read a Harbor job directory or a sweep directory (sweep.json + one c<level>/ job "
            "per concurrency level) and write report.md, plots/*.png, summary.csv, "
            "summary.json, trials.csv, requests.csv and requests.jsonl. Running or failed "
            "trials are counted and shown; quality is given with infra failures excluded and "
            "with them counted as 0. Quality intervals resample scenarios (all repeats "
            "together); --compare pairs runs by scenario and level. A configuration run "
            "several times is given as its runs joined by commas (a1,a2,a3,a4,a5 --compare "
            "b1,b2,b3,b4,b5): latency is then judged on the runs' spread (fewer than 5 runs "
            "per side give latency deltas, no latency verdict)."
        ),
    )
    p.add_argument("path", type=runs_of, metavar="JOB_OR_SWEEP",
                   help="Harbor job directory (jobs/<job>) or sweep directory (jobs/<sweep>); "
                        "several runs of one configuration joined by commas.")
    p.add_argument("--compare", type=runs_of, nargs="+", default=[], metavar="OTHER",
                   help="Other jobs/sweeps to put side by side, with deltas against JOB_OR_SWEEP "
                        "(quality and latency deltas paired by scenario with a 95%% interval; "
                        "called better/worse only when it excludes 0). Refused when the runs used "
                        "different datasets, labels or instruction modes (see --allow-mixed). "
                        "Each OTHER is one configuration: a job/sweep, or its runs joined by "
                        "commas; latency verdicts need 5 or more runs per "
                        "side, run in pairs of one run of each side, each pair's order by a "
                        "coin flip (A B B A A B ...).")
    p.add_argument("--allow-mixed", action="store_true",
                   help="Compare runs even when their dataset, labels or instruction mode "
                        "differ (the report states the difference; goals vs conversation mode "
                        "over the same scenarios and labels is a comparison of protocols).")
    p.add_argument("--out", type=Path, default=None, metavar="DIR",
                   help="Output folder (default: the sweep directory itself, or <job>-report/ "
                        "beside a job).")
    p.add_argument("--slo", action="append", metavar="NAME=NUMBER",
                   help="Goodput bound per request, repeatable (comma lists too): ttft_ms, "
                        "itl_ms (each request's time per output token; also tpot_ms), e2e_ms; "
                        "e.g. --slo ttft_ms=500 --slo e2e_ms=30000. Same format and metric "
                        "names as `bankbench capacity --slo`.")
    p.add_argument("--no-plots", action="store_true", help="Skip the figures (faster).")
    p.set_defaults(func=_run)


def runs_of(text: str) -> list[Path]:
    """A configuration's runs: one path, or several joined by commas (a folder whose own
    name holds a comma is taken whole)."""
    if "," not in text or Path(text).exists():
        return [Path(text)]
    runs = [Path(part) for part in text.split(",") if part]
    if not runs:
        raise argparse.ArgumentTypeError(f"{text!r}: no run named")
    return runs


def _run(args: argparse.Namespace) -> int:
    from analysis.report import write_report
    from analysis.tables import AnalysisInputError
    from bankbench.slo_option import request_slo

    try:
        out = _writable_out(args)
    except ValueError as exc:
        print(f"bankbench report: {exc}", file=sys.stderr)
        return 2
    try:
        slo = request_slo(args.slo)
        print(f"bankbench report: reading {','.join(map(str, args.path))}"
              + (f" and {len(args.compare)} to compare" if args.compare else ""), file=sys.stderr)
        report = write_report(args.path, out, args.compare, slo, draw=not args.no_plots,
                              allow_mixed=args.allow_mixed,
                              log=lambda line: print(f"  {line}", file=sys.stderr))
    except (AnalysisInputError, ValueError) as exc:
        print(f"bankbench report: {exc}", file=sys.stderr)
        return 2
    from analysis.console import summary_table_from

    table = summary_table_from(report.parent)
    if table:
        print(table, file=sys.stderr)
    print(report)
    return 0


def _writable_out(args: argparse.Namespace) -> Path | None:
    """Where the report goes: --out, else its default folder (a sweep's own) — or, when that
    cannot be written (a sweep on a read-only share), `./<name>-report`, said on one line.
    ValueError (one line) when --out cannot be written."""
    from analysis.report import default_out_dir
    from bankbench.writable import unwritable

    if args.out is not None:
        if why := unwritable(Path(args.out)):
            raise ValueError(f"--out {args.out}: cannot write there ({why})")
        return Path(args.out)
    first = Path(args.path[0])
    if not first.is_dir():
        return None  # the reader names the missing folder
    default = default_out_dir(first)
    why = unwritable(default)
    if why is None:
        return None
    here = Path.cwd() / f"{first.resolve().name}-report"
    if unwritable(here):
        raise ValueError(f"{default}: cannot write there ({why}), nor in {Path.cwd()}; "
                         "give --out DIR")
    print(f"bankbench report: {default} cannot be written ({why}); the report goes to {here} "
          "(--out chooses), the sweep is only read", file=sys.stderr)
    return here
