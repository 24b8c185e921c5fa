"""`bankbench capacity`: how many concurrent agents a deployment serves while every agent still
gets fast answers (latency SLOs) and still makes the same decisions (consistency)."""

from __future__ import annotations

import argparse
import signal
import sys
from datetime import UTC, datetime
from pathlib import Path

from bankbench.commands.sweep import DefaultsHelpFormatter, add_run_options


def _tier(text: str):
    """One --tier NAME=SPEC (bankbench/slo_option.py · tier)."""
    from bankbench.slo_option import tier

    try:
        return tier(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--tier ")) from None


def _slo(text: str) -> dict[str, float]:
    """One --slo value (NAME=NUMBER or a comma list), by the parser `report` shares."""
    from bankbench.slo_option import level_slos

    try:
        return level_slos([text])
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--slo ")) from None


# What an option left unset means, said in --help (argparse shows no `None` default).
_UNSET = {"min_tsq": "no floor", "max_minutes": "no limit", "gpus": "not said",
          "min_achieved_share": "the runner's bound", "reference": "none: a level of this search",
          "control_base_url": "none"}


def _field(name: str) -> dict:
    from contracts.capacity import CapacitySearch

    info = CapacitySearch.model_fields[name]
    text = (info.description or "").rstrip(".").replace("%", "%%")
    if name in _UNSET:
        text += f" (default: {_UNSET[name]})"
    return {"default": info.get_default(), "help": text}


def _explain_attempts(p: argparse.ArgumentParser) -> None:
    """--attempts is shared with `sweep`; here it only ever raises --repeats."""
    action = next(a for a in p._actions if a.dest == "attempts")
    action.help = ("Harbor attempts per task (-k) at each level; a capacity search runs "
                   "max(--attempts, --repeats) runs of every scenario per level, so set "
                   "--repeats (kept for the options `sweep` shares)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "capacity",
        help="find the highest concurrency within latency SLOs and consistent decisions",
        description=(
            "Double the concurrency from --start until a level fails, then bisect, to find the "
            "highest level at which every --slo holds and the agent's decisions stay intact: "
            "every scenario runs --repeats times per level, and a level's decisions are intact "
            "when the divergence of their distribution from the reference's (the lowest "
            "batched level, --reference-level, or --reference) is shown to be under "
            "--max-divergence, with the chance of passing a degraded level held to --alpha "
            "across all levels and looks. A level that is neither shown intact nor degraded is "
            "run again with its repeats doubled (up to --max-looks looks); only a failing "
            "level stops the climb. Levels are ordinary sweep levels (c<level>/ Harbor jobs): "
            "finished ones are reused and an interrupted search resumes with --resume. Each "
            "step is recorded in capacity.json; the search ends with one line (capacity, "
            "achieved concurrency, its boundary interval, the limiting check, inconclusive "
            "levels, repeats per level), the level table, capacity.png and the sweep's "
            "report. With --tier (or the default tiers, when neither --tier nor --slo is "
            "given) every tier gets its own capacity from the same levels, in one table. "
            "--plan prints what a design can claim without running anything."
        ),
        formatter_class=DefaultsHelpFormatter,
    )
    search = p.add_argument_group("search")
    search.add_argument("--slo", type=_slo, action="append", default=[], metavar="NAME=NUMBER",
                        help="upper bound per level, repeatable (comma lists too; the format "
                        "and metric names of `bankbench report --slo`): <metric>_<stat>_ms (metric "
                        "server_ttft (the server's own first token, Dynamo; e.g. "
                        "server_ttft_p90_ms=500) | ttft (client, first chunk) | ttfc (time to "
                        "first tool call) | itl | tpot | e2e, or "
                        "AIPerf's time_to_first_token | inter_token_latency | request_latency; "
                        "stat "
                        "mean | p50 | p90 | p95 | p99), error_rate, overload_rate, lost_rate or "
                        "tool_call_error_rate (agent replies in any tool-call integrity class)")
    from bankbench.slo_option import DEFAULT_TIERS

    search.add_argument("--tier", type=_tier, action="append", default=[],
                        metavar="NAME=SPEC",
                        help="a named SLO tier, repeatable: SPEC is the --slo list with an "
                        "operator per bound (<= a ceiling, >= a floor; = as in --slo), e.g. "
                        "interactive=ttfc_p90_ms<=2000,output_tps_per_user_p10>=40. Every "
                        "tier gets its own capacity from the same levels (the climb goes on "
                        "until every tier failed); --slo bounds apply to every tier; the "
                        "first tier's figures are capacity.json's top-level ones. Without "
                        "--tier and --slo: " + "; ".join(DEFAULT_TIERS) + " (docs/capacity.md)")
    search.add_argument("--max-divergence", "--max-drop", dest="max_divergence", type=float,
                        **_field("max_divergence"))
    search.add_argument("--alpha", type=float, **_field("alpha"))
    repeats = _field("repeats")
    repeats["help"] += "; the same as Harbor attempts per task: --attempts only raises it"
    search.add_argument("--repeats", type=int, **repeats)
    search.add_argument("--max-looks", type=int, **_field("max_looks"))
    search.add_argument("--min-tsq", type=float, **_field("min_tsq"))
    search.add_argument("--min-achieved-share", type=float, **_field("min_achieved_share"))
    search.add_argument("--agreement-metric", choices=["tool_f1", "arg_agreement"],
                        **_field("agreement_metric"))
    search.add_argument("--start", type=int, **_field("start"))
    search.add_argument("--max-level", type=int, **_field("max_level"))
    search.add_argument("--max-minutes", type=float, **_field("max_minutes"))
    search.add_argument("--gpus", type=int, **_field("gpus"))
    search.add_argument("--reference-level", type=int, **_field("reference_level"))
    search.add_argument("--reference", metavar="SWEEP_DIR", **_field("reference"))
    search.add_argument("--control", choices=["none", "deterministic"], **_field("control"))
    search.add_argument("--control-base-url", metavar="URL", **_field("control_base_url"))
    planning = p.add_argument_group("plan (no server, nothing run)")
    planning.add_argument("--plan", action="store_true",
                          help="print what the design can claim — its best bound, and its "
                          "false stop and detection rates simulated over the family of noise "
                          "models — then exit")
    planning.add_argument("--scenarios", type=int,
                          help="scenarios the search would run (default: --limit)")
    planning.add_argument("--plan-searches", type=int, default=50,
                          help="simulated searches per noise model and condition (50: a rate "
                          "of 0 reads as under 0.06 at 95 %%; docs/capacity.md gives 500)")
    add_run_options(p)
    _explain_attempts(p)
    p.add_argument("--out", default="jobs", help="parent folder of sweep directories")
    p.add_argument("--name", help="sweep directory name (default: capacity-<UTC timestamp>)")
    p.add_argument("--resume", metavar="SWEEP_DIR",
                   help="continue an interrupted search (its options are read back from it)")
    p.add_argument("--no-plots", action="store_true",
                   help="skip the figures (the report's and capacity.png): faster")
    from contracts.sweep import STEADY_MULTIPLE

    # Every level of the search at steady state unless told otherwise (--steady 0).
    p.set_defaults(func=_run, steady=STEADY_MULTIPLE)


def _merge_slos(given: list[dict[str, float]]) -> dict[str, float]:
    """Repeated --slo flags accumulate; a name given twice with two values is refused."""
    merged: dict[str, float] = {}
    for bounds in given:
        for name, bound in bounds.items():
            if merged.get(name, bound) != bound:
                raise SystemExit(f"bankbench capacity: --slo {name} given twice "
                                 f"({merged[name]:g} and {bound:g})")
            merged[name] = bound
    return merged


def _fail(message: str, code: int = 1) -> int:
    print(f"bankbench capacity: {message}", file=sys.stderr)
    return code


def _run(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from bankbench.capacity.run import load_record, run_capacity
    from bankbench.commands.sweep import (
        _explicit_options,
        _stop_cleanly_on_signals,
        unwritable_sweep,
    )
    from bankbench.serve.errors import ServeError
    from bankbench.sweep.errors import SweepError
    from bankbench.sweep.manifest import load_manifest
    from contracts.capacity import CapacitySearch
    from contracts.sweep import SweepConfig

    try:
        if args.resume:
            sweep_dir = Path(args.resume)
            config = load_manifest(sweep_dir).config
            search = load_record(sweep_dir).search
        else:
            from bankbench.slo_option import default_tiers

            tiers = args.tier or ([] if args.slo else default_tiers())
            search = CapacitySearch(
                slos=_merge_slos(args.slo), tiers=tiers, max_divergence=args.max_divergence,
                alpha=args.alpha, repeats=args.repeats, max_looks=args.max_looks,
                min_tsq=args.min_tsq, min_achieved_share=args.min_achieved_share,
                agreement_metric=args.agreement_metric,
                start=args.start, max_level=args.max_level, max_minutes=args.max_minutes,
                gpus=args.gpus, reference_level=args.reference_level,
                reference=str(Path(args.reference).resolve()) if args.reference else None,
                control=args.control, control_base_url=args.control_base_url)
            if args.plan:  # no server, no sweep: the design alone
                return _plan(args, search)
            args.levels = [search.start]  # the sweep config's first level; more are added
            config = SweepConfig.model_validate(_explicit_options(args, all_fields=True))
            name = args.name or "capacity-" + datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
            sweep_dir = Path(args.out) / name
    except SweepError as exc:
        return _fail(str(exc), 2)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = "--" + str(first["loc"][0]).replace("_", "-") if first["loc"] else "options"
        return _fail(f"{where}: {first['msg']}", 2)
    if search.reference and not Path(search.reference).is_dir():
        return _fail(f"--reference {search.reference}: no such directory", 2)

    if problem := unwritable_sweep(sweep_dir, resume=bool(args.resume)):
        return _fail(problem, 2)
    stopped_by = _stop_cleanly_on_signals()
    try:
        record = run_capacity(config, search, sweep_dir, resume=bool(args.resume))
    except KeyboardInterrupt:
        return 128 + stopped_by.get("signal", signal.SIGINT)
    except (SweepError, FileNotFoundError, ValueError) as exc:
        return _fail(str(exc))
    except ServeError as exc:
        return _fail(f"server failed to start: {exc}")
    _finish(sweep_dir.resolve(), record, draw=not args.no_plots)
    return 0


def _plan(args: argparse.Namespace, search) -> int:
    """The design's figures for --scenarios/--limit, --repeats, --max-looks and the levels,
    with its error rates simulated over the family of noise models."""
    import os

    from bankbench.capacity import plan
    from bankbench.capacity.search import levels_judgeable

    n = args.scenarios or args.limit
    if not n or n < 2:
        return _fail("--plan: say how many scenarios the search would run (--scenarios N or "
                     "--limit N, at least 2)", 2)
    if args.plan_searches < 1:
        return _fail("--plan-searches: at least 1", 2)
    top = min(search.max_level, n * search.repeats)
    search = search.model_copy(update={"max_level": top})
    k = levels_judgeable(search, top)
    design = plan.design(search, n, k)
    print(f"levels {search.start}..{top}, reference c{min(search.reference_level, top)}")
    tiers = search.tier_list()
    if len(tiers) > 1:
        print(f"{len(tiers)} tiers ({', '.join(t.name for t in tiers)}): the climb goes on "
              f"until every tier failed and each bisects on its own, so up to {k} levels "
              f"are judged (alpha split over {k} levels, one tier alone: "
              f"{levels_judgeable(search.model_copy(update={'tiers': []}), top)})")
    if design.best_bound < search.max_divergence:
        print(f"simulating {args.plan_searches} searches per noise model and condition ...",
              flush=True)
        # the simulated latency knows no tier's bounds: as many tiers, the simulation's own
        # latency bound in each, so the rates carry the tiers' alpha split
        simulated = search.model_copy(update={"tiers": [
            t.model_copy(update={"slos": {}, "floors": {}}) for t in search.tiers]})
        design = plan.design(search, n, k, plan.family_rates(
            simulated, n, args.plan_searches, workers=max(1, min(4, os.cpu_count() or 1))))
    for line in plan.summary_lines(design, search):
        print(line)
    warning = plan.verdict(design, search.max_divergence)
    print(warning or "the design supports its claim over the family")
    return 0


def _finish(sweep_dir: Path, record, *, draw: bool) -> None:
    import pandas as pd

    from analysis.consistency_report import CONSISTENCY_CSV, console_table
    from analysis.report import write_report
    from bankbench.capacity.output import (
        draw_frontier,
        headline,
        level_table,
        render_table,
        tier_table,
    )

    report = write_report(sweep_dir, draw=draw)
    plot = draw_frontier(sweep_dir, record) if draw else None
    if (sweep_dir / CONSISTENCY_CSV).is_file():
        print("\ndecision consistency per level:\n"
              + console_table(pd.read_csv(sweep_dir / CONSISTENCY_CSV)))
    print("\nsearch steps:\n" + render_table(level_table(record)))
    if len(record.tiers) > 1:
        print("\ncapacity per tier (the same levels judged against each):\n"
              + tier_table(record).to_string(index=False))
    print(f"\nreport: {report}")
    if plot is not None:
        print(f"frontier: {plot}")
    print(f"search steps: {sweep_dir / 'capacity.json'}")
    print(headline(record))
