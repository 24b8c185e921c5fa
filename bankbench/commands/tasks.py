"""`bankbench tasks build`: turn dataset scenarios into Harbor task directories."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

SOURCE_HELP = (
    "where the rows come from: 'hf' (download galileo-ai/agent-leaderboard-v2 into the cache; "
    "'hf@<revision>' pins a branch, tag or commit), a directory in the hub layout "
    "(<config>/<domain>-*.parquet), or 'sample' (the original sample bundled with bankbench)"
)



def register(sub: argparse._SubParsersAction) -> None:
    from contracts.conversation import DEFAULT_MAX_TURNS
    from contracts.expected import DEFAULT_LABEL_METHOD
    from contracts.task import DEFAULT_MODE, INSTRUCTION_MODES
    from tasks.banking.labels import methods

    p = sub.add_parser(
        "tasks",
        help="build Harbor task directories from the banking scenarios",
        description="Build one Harbor task directory per dataset scenario.",
    )
    actions = p.add_subparsers(dest="tasks_command", metavar="ACTION", required=True)
    b = actions.add_parser(
        "build",
        help="validate the dataset, label expected tools, write one task per scenario",
        description=(
            "Validate every dataset row, label each scenario's expected tools, and write one "
            "Harbor task per scenario under --out (task.toml, instruction.md, the mock bank "
            "environment, the verifier with tests/expected.json, an oracle solution). "
            "Nothing is written when a row is bad, unless --on-bad-row skip. Rebuilding with "
            "the same inputs leaves every file byte-identical."
        ),
    )
    b.add_argument("--source", default="hf", help=SOURCE_HELP + " (default: hf)")
    b.add_argument("--domain", default="banking", help="dataset split (default: banking)")
    b.add_argument("--out", required=True, type=Path, help="directory to write task dirs into")
    b.add_argument(
        "--mode",
        choices=INSTRUCTION_MODES,
        default=DEFAULT_MODE,
        help="instruction content: first message plus the goals as requests (default), "
        "the first message alone, or the first message with a simulated customer who brings "
        "up the goals over later turns (`/app/bank say`; see docs/conversation.md)",
    )
    b.add_argument("--max-turns", type=int, default=DEFAULT_MAX_TURNS, metavar="N",
                   help="--mode conversation: the most answers the customer gives in one "
                   "attempt; its N-th answer ends the conversation (default: %(default)s)")
    b.add_argument("--labels", default=DEFAULT_LABEL_METHOD, metavar="METHOD",
                   help="how expected tools are derived, per goal: " + methods.help_text())
    m = b.add_argument_group("--labels model")
    m.add_argument("--labels-endpoint", metavar="URL",
                   help="OpenAI-compatible base URL (…/v1) of the labelling model")
    m.add_argument("--labels-model", metavar="NAME", help="served model name to ask")
    m.add_argument("--labels-key-env", default="OPENAI_API_KEY", metavar="VAR",
                   help="environment variable holding the endpoint's key, if it needs one "
                   "(default: OPENAI_API_KEY); the key is never written anywhere")
    m.add_argument("--labels-nvext-annotation", action="append", default=[], metavar="TEXT",
                   help="Dynamo nvext annotation sent with each request, formatted with "
                   "{scenario_id} and {index} (e.g. output_replay_id:labels:{index} to replay "
                   "scripted answers from a mocker trace); repeatable")
    m.add_argument("--labels-out", type=Path, metavar="PATH",
                   help="where the reviewable labels file goes (default: "
                   "<out>.model-labels.json beside --out)")
    b.add_argument(
        "--on-bad-row",
        choices=("fail", "skip"),
        default="fail",
        help="a row that fails validation stops the build before anything is written (fail, "
        "default) or is left out and reported (skip)",
    )
    b.add_argument("--limit", type=int,
                   help="build only the first N selected scenarios (default: every one)")
    b.add_argument(
        "--scenarios",
        help="comma-separated scenario ids to build, e.g. banking-001,banking-007",
    )
    b.add_argument(
        "--offline",
        action="store_true",
        help="with --source hf: use the cached snapshot only, never contact the hub",
    )
    b.add_argument(
        "--prune-stale",
        action="store_true",
        help="remove task dirs under --out whose scenario is not in the dataset any more",
    )
    b.add_argument(
        "--progress-every", type=int, default=10, metavar="N",
        help="progress line every N tasks (default: %(default)s)"
    )
    b.add_argument("--json", action="store_true", help="print the build summary as JSON")
    b.set_defaults(func=_build)


def _build(args: argparse.Namespace) -> int:
    from bankbench.paths import hub_cache
    from tasks.banking.build import build_tasks
    from tasks.banking.dataset import DatasetError
    from tasks.banking.labels import LabelsError
    from tasks.banking.writer import WriteError

    model_options = None
    if args.labels == "model":
        from tasks.banking.labels.llm import ModelOptions

        if not args.labels_endpoint or not args.labels_model:
            print("bankbench tasks build: --labels model needs --labels-endpoint and "
                  "--labels-model", file=sys.stderr)
            return 2
        out = args.labels_out or args.out.with_name(args.out.name + ".model-labels.json")
        model_options = ModelOptions(endpoint=args.labels_endpoint, model=args.labels_model,
                                     key_env=args.labels_key_env, out=out,
                                     nvext_annotations=args.labels_nvext_annotation)
    scenarios = None
    if args.scenarios:
        scenarios = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    try:
        summary = build_tasks(
            args.source,
            args.out,
            domain=args.domain,
            mode=args.mode,
            labels=args.labels,
            on_bad_row=args.on_bad_row,
            limit=args.limit,
            scenarios=scenarios,
            offline=args.offline,
            hub_cache=hub_cache(),
            prune_stale=args.prune_stale,
            progress_every=args.progress_every,
            model_options=model_options,
            max_turns=args.max_turns,
        )
    except (DatasetError, LabelsError, WriteError) as exc:
        print(f"bankbench tasks build: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(summary.model_dump_json(indent=2))
    return 0
