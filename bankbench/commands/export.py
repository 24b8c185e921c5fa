"""`bankbench export`: a job or a sweep as another evaluator's datasets (NeMo Evaluator)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

FORMATS = ("nemo-evaluator",)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export",
        help="Write a job or sweep as NeMo Evaluator agentic datasets (JSONL).",
        description=(
            "Read a Harbor job directory or a sweep directory and write one JSONL file per "
            "NeMo Evaluator agentic metric (tool_call_accuracy, agent_goal_accuracy, "
            "topic_adherence) in the RAGAS sample shape, plus rows.jsonl naming the trial "
            "behind each line and export.json. A sweep gives one file set per level "
            "(c<level>/). Scored and agent_failed trials are exported; infra, harness, "
            "interrupted and running trials are skipped and counted. Field mapping: "
            "docs/export.md."
        ),
    )
    p.add_argument("path", type=Path, metavar="JOB_OR_SWEEP",
                   help="Harbor job directory (jobs/<job>) or sweep directory (jobs/<sweep>).")
    p.add_argument("--format", choices=FORMATS, default="nemo-evaluator",
                   help="Target format (default: %(default)s).")
    p.add_argument("--out", type=Path, default=None, metavar="DIR",
                   help="Output folder (default: <job>-nemo-evaluator/ beside a job, or "
                        "<sweep>/nemo-evaluator/).")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from analysis.export.writer import export_nemo
    from analysis.tables import AnalysisInputError

    print(f"bankbench export: reading {args.path}", file=sys.stderr)
    try:
        manifest = export_nemo(args.path, args.out,
                               log=lambda line: print(f"  {line}", file=sys.stderr))
    except (AnalysisInputError, OSError) as exc:
        print(f"bankbench export: {exc}", file=sys.stderr)
        return 2
    exported = sum(manifest.levels.values())
    skipped = ", ".join(f"{n} {s}" for s, n in sorted(manifest.skipped.items())) or "none"
    print(f"  {exported} trials exported; skipped: {skipped}; "
          f"{len(manifest.issues)} input issue(s) (see export.json)", file=sys.stderr)
    out = Path(args.out) if args.out else None
    from analysis.export.writer import MANIFEST_FILE, default_out_dir

    print((out or default_out_dir(args.path)) / MANIFEST_FILE)
    return 0
