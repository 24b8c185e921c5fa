"""`bankbench export`: a job or a sweep in another tool's format (NeMo Evaluator datasets,
`nel` results, AIPerf profile exports)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

FORMATS = ("nemo-evaluator", "nel", "aiperf")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export",
        help="Write a job or sweep as NeMo Evaluator datasets, nel results or AIPerf exports.",
        description=(
            "Read a Harbor job, a sweep or a multi-router sweep and write it in another "
            "tool's format: one file set per level (c<level>/) and per arm (r-<router>/), "
            "plus export.json. nemo-evaluator: one JSONL per NeMo Evaluator agentic metric "
            "(RAGAS sample shape) and rows.jsonl. nel: results.jsonl (one line per scenario "
            "and repeat) and an eval-*.json bundle, so `nel compare c1 c32` compares levels. "
            "aiperf: profile_export.jsonl (one record per LLM request) and "
            "profile_export_aiperf.json, as AIPerf writes a run. Field mapping: docs/export.md."
        ),
    )
    p.add_argument("path", type=Path, metavar="JOB_OR_SWEEP",
                   help="Harbor job directory (jobs/<job>) or sweep directory (jobs/<sweep>).")
    p.add_argument("--format", choices=FORMATS, default="nemo-evaluator",
                   help="Target format (default: %(default)s).")
    p.add_argument("--out", type=Path, default=None, metavar="DIR",
                   help="Output folder (default: <job>-<format>/ beside a job, or "
                        "<sweep>/<format>/).")
    p.add_argument("--reward", default=None, metavar="KEY",
                   help="nel only: the verifier's score that is a problem's reward "
                        "(default: solved, 0/1, so nel compare runs McNemar; e.g. tsq).")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from analysis.export.layout import MANIFEST_FILE, default_out_dir
    from analysis.tables import AnalysisInputError

    if args.reward is not None and args.format != "nel":
        print("bankbench export: --reward applies to --format nel only", file=sys.stderr)
        return 2
    print(f"bankbench export: reading {args.path}", file=sys.stderr)
    log = lambda line: print(f"  {line}", file=sys.stderr)  # noqa: E731
    try:
        if args.format == "nel":
            from analysis.export.nel import DEFAULT_REWARD, export_nel

            manifest = export_nel(args.path, args.out, args.reward or DEFAULT_REWARD, log=log)
        elif args.format == "aiperf":
            from analysis.export.aiperf import export_aiperf

            manifest = export_aiperf(args.path, args.out, log=log)
        else:
            from analysis.export.writer import export_nemo

            manifest = export_nemo(args.path, args.out, log=log)
    except (AnalysisInputError, OSError) as exc:
        print(f"bankbench export: {exc}", file=sys.stderr)
        return 2
    exported = sum(manifest.levels.values())
    skipped = ", ".join(f"{n} {s}" for s, n in sorted(manifest.skipped.items())) or "none"
    print(f"  {exported} rows exported; skipped: {skipped}; "
          f"{len(manifest.issues)} input issue(s) (see export.json)", file=sys.stderr)
    print((Path(args.out) if args.out else default_out_dir(args.path, args.format))
          / MANIFEST_FILE)
    return 0
