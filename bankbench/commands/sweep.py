"""`bankbench sweep`: one Harbor job per concurrency level against one server, then a report."""

from __future__ import annotations

import argparse
import signal
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def _from_config(field: str, more: str = "") -> dict[str, Any]:
    """argparse `default` and `help` of the option for SweepConfig field `field`: the model is
    the one place each default and description is written."""
    from contracts.sweep import SweepConfig

    info = SweepConfig.model_fields[field]
    default = info.get_default(call_default_factory=True)
    if isinstance(default, dict):
        default = []  # key=value options repeat; their items become the dict
    return {"default": default, "help": (info.description or "").rstrip(".") + more}


def _choices(field: str) -> list[str]:
    """The values a Literal-typed SweepConfig field allows."""
    from typing import get_args

    from contracts.sweep import SweepConfig

    return list(get_args(SweepConfig.model_fields[field].annotation))


def _key_values(items: list[str], option: str) -> dict[str, str]:
    from agents.options import key_values

    try:
        return key_values(items, option)
    except ValueError as exc:
        raise SystemExit(f"bankbench sweep: {exc}") from None


def _levels(text: str) -> list[int]:
    items = [x.strip() for x in text.split(",")]
    if "" in items:
        raise argparse.ArgumentTypeError(
            f"{text!r}: an empty level between commas; expected comma-separated integers, "
            "e.g. 1,2,4,8")
    try:
        return [int(x) for x in items]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected comma-separated integers, e.g. 1,2,4,8"
        ) from None


def _names(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


class DefaultsHelpFormatter(argparse.HelpFormatter):
    """`(default: …)` only where it says something: never None, an empty list or False, and a
    list as the comma list one types (`1,2,4,8`), not Python's `[1, 2, 4, 8]`."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if ("%(default)" in text or not action.option_strings or default is argparse.SUPPRESS
                or default is None or default is False or default in ([], {}, ())):
            return text
        if isinstance(default, list | tuple):
            return f"{text} (default: {','.join(map(str, default))})"
        return text + " (default: %(default)s)"


def add_run_options(p: argparse.ArgumentParser) -> None:
    """Every SweepConfig option but --levels: shared with `bankbench capacity`."""
    p.add_argument("--attempts", "-k", type=int, **_from_config("attempts"))
    server = p.add_argument_group("server (one of)")
    server.add_argument("--profile", **_from_config("profile"))
    server.add_argument("--base-url", **_from_config("base_url"))
    p.add_argument("--model", **_from_config("model"))
    p.add_argument("--router", **_from_config(
        "router", "; as `bankbench serve up --router`"))
    p.add_argument("--workers", type=int, **_from_config("workers"))
    p.add_argument("--set", dest="server_set", action="append", metavar="KEY=VALUE",
                   **_from_config("server_options", "; repeatable, see `bankbench serve up "
                                  "--help`"))
    tasks = p.add_argument_group("tasks")
    tasks.add_argument("--tasks", **_from_config("tasks"))
    tasks.add_argument("--source", **_from_config("source"))
    tasks.add_argument("--limit", type=int, **_from_config("limit", " (default: every one)"))
    tasks.add_argument("--mode", choices=_choices("mode"), **_from_config("mode"))
    # No argparse default (SUPPRESS): given without --mode conversation it is an error, not
    # silently ignored, so the parser must see whether it was typed.
    turns = _from_config("max_turns")
    tasks.add_argument("--max-turns", type=int, metavar="N", default=argparse.SUPPRESS,
                       help=f"{turns['help']} (default {turns['default']})")
    from tasks.banking.labels.methods import METHODS

    tasks.add_argument("--labels", **_from_config("labels", ": " + " | ".join(
        m for m in METHODS if m != "model") + " (see `bankbench tasks build --help`)"))
    p.add_argument("--env", **_from_config("env"))
    p.add_argument("--shards", type=int, metavar="N", **_from_config(
        "shards", " (docs/scaling.md)"))
    p.add_argument("--ray", metavar="ADDRESS", **_from_config("ray"))
    window = p.add_argument_group("steady state (docs/analysis.md: the measured window)")
    window.add_argument("--steady", type=int, metavar="M", **_from_config("steady"))
    window.add_argument("--warmup-share", type=float, metavar="S",
                        **_from_config("warmup_share"))
    window.add_argument("--keep-drain", action="store_true", **_from_config("keep_drain"))
    p.add_argument("--ak", action="append", metavar="KEY=VALUE",
                   **_from_config("agent_kwargs", "; repeatable, e.g. self_eval=true"))


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sweep",
        help="run the banking agent at several concurrency levels and report",
        description=(
            "Run one Harbor job per concurrency level (harbor run -n LEVEL) of the banking "
            "agent against one server, scrape the server's /metrics before and after each "
            "level, and write sweep.json plus a report (report.md, plots, summary.csv; "
            "--no-plots: without the plots). "
            "Either launch a server profile (--profile, brought down at the end) or point at "
            "a running OpenAI-compatible server (--base-url with --model)."
        ),
        formatter_class=DefaultsHelpFormatter,
    )
    p.add_argument("--levels", type=_levels, metavar="N,N,…",
                   **_from_config("levels", ", comma-separated"))
    add_run_options(p)
    p.add_argument("--routers", type=_names, metavar="R,R,…", default=None,
                   help="run the same sweep once per router, each on a freshly started stack, "
                   "into <sweep>/r-<router>/ (e.g. round-robin,kv,thompson; needs --profile; "
                   "see docs/ARCHITECTURE.md)")
    p.add_argument("--out", default="jobs", help="parent folder of sweep directories")
    p.add_argument("--name", help="sweep directory name (default: sweep-<UTC timestamp>)")
    p.add_argument("--resume", metavar="SWEEP_DIR",
                   help="continue an interrupted or stopped sweep (same options as it was "
                   "started with; --base-url NEW may name the server's new address)")
    p.add_argument("--port", type=int, metavar="PORT",
                   help="with --resume of a --profile sweep: start its server on PORT (the "
                   "level jobs are pointed at it), e.g. when the old port is taken")
    p.add_argument("--no-plots", action="store_true",
                   help="write the report without its figures (report.md, summary.csv and "
                   "the data files; no plots/): faster. `bankbench report SWEEP_DIR` draws "
                   "them later")
    p.add_argument("--rayjob", metavar="IMAGE",
                   help="dry run: print a KubeRay RayJob manifest that runs this sweep with "
                   "--ray auto in pods of IMAGE (one worker pod per shard), run nothing "
                   "(docs/scaling.md)")
    p.set_defaults(func=_run)


_NOT_IN_RAYJOB = {"--rayjob": 1, "--ray": 1, "--out": 1, "--name": 1, "--resume": 1,
                  "--port": 1}


def _rayjob_args(argv: list[str]) -> list[str]:
    """The sweep options as typed, without those the RayJob sets itself."""
    out, skip = [], 0
    for arg in argv:
        if skip:
            skip -= 1
        elif arg.split("=", 1)[0] in _NOT_IN_RAYJOB:
            skip = 0 if "=" in arg else _NOT_IN_RAYJOB[arg]
        else:
            out.append(arg)
    return out


def _run(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from bankbench.serve.errors import ServeError
    from bankbench.sweep.errors import BadOptions, SweepError
    from bankbench.sweep.manifest import load_manifest
    from bankbench.sweep.routers import is_router_sweep, load_router_manifest, run_router_sweep
    from bankbench.sweep.runner import run_sweep
    from contracts.sweep import SweepConfig

    routers = args.routers
    if args.port is not None and not args.resume:
        print("bankbench sweep: --port applies to --resume of a --profile sweep",
              file=sys.stderr)
        return 2
    if args.routers and args.router:
        print("bankbench sweep: give --router (one) or --routers (several), not both",
              file=sys.stderr)
        return 2
    if args.resume:
        sweep_dir = Path(args.resume)
        try:
            if is_router_sweep(sweep_dir):
                stored = load_router_manifest(sweep_dir)
                routers = routers or stored.routers
            else:
                stored = load_manifest(sweep_dir)
        except SweepError as exc:
            print(f"bankbench sweep: {exc}", file=sys.stderr)
            return 2
        explicit = _explicit_options(args)
        # The stored config always holds max_turns; only a typed --max-turns is checked.
        _check_max_turns(explicit, explicit.get("mode", stored.config.mode))
        if explicit:
            # Given options must match the stored ones; check_resumable names any difference.
            # Key=value options are checked key by key: typing one --set again must not drop
            # the others the sweep stored (e.g. the replay trace a scripted mocker got).
            fields = stored.config.model_dump()
            for key, value in explicit.items():
                fields[key] = ({**fields[key], **value} if isinstance(value, dict)
                               and isinstance(fields.get(key), dict) else value)
        else:
            fields = stored.config.model_dump()
    else:
        # A default name is claimed atomically (a taken one becomes <name>-2): two sweeps
        # started in the same second never share a directory.
        name = args.name or "sweep-" + datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
        sweep_dir = Path(args.out) / name
        fields = _explicit_options(args, all_fields=True)
    if args.rayjob:
        fields["ray"] = "auto"
    try:
        config = SweepConfig.model_validate(fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = _option_name(first["loc"])
        given = f" {first['input']!r}" if first["loc"] and first["type"] != "missing" else ""
        print(f"bankbench sweep: {where}{given}: {first['msg']}", file=sys.stderr)
        return 2
    if args.rayjob:
        from bankbench.sweep.rayjob import render

        typed = sys.argv[sys.argv.index("sweep") + 1:] if "sweep" in sys.argv else []
        print(render(_rayjob_args(typed), image=args.rayjob, shards=config.shards,
                     name=sweep_dir.name), end="")
        return 0
    if args.port is not None and not config.profile:
        print("bankbench sweep: --port applies to a --profile sweep; a --base-url sweep "
              "resumes at a new address with --base-url NEW_URL", file=sys.stderr)
        return 2
    if problem := unwritable_sweep(sweep_dir, resume=bool(args.resume)):
        print(f"bankbench sweep: {problem}", file=sys.stderr)
        return 2
    stopped_by = _stop_cleanly_on_signals()
    try:
        if routers:
            reports = run_router_sweep(config, routers, sweep_dir, resume=bool(args.resume),
                                       claim=not args.name, draw=not args.no_plots)
        else:
            reports = [run_sweep(config, sweep_dir, resume=bool(args.resume),
                                 claim=not args.resume and not args.name, port=args.port,
                                 draw=not args.no_plots)]
    except KeyboardInterrupt:
        return 128 + stopped_by.get("signal", signal.SIGINT)
    except (SweepError, FileNotFoundError, ValueError) as exc:
        print(f"bankbench sweep: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, BadOptions) else 1
    except ServeError as exc:  # its own one-line cause and the log's tail
        print(f"bankbench sweep: server failed to start: {exc}", file=sys.stderr)
        return 1
    for report in reports:
        _print_summary(report.parent)
        print(f"\nreport: {report}")
    return 0


def unwritable_sweep(sweep_dir: Path, *, resume: bool) -> str | None:
    """Why a sweep (or capacity search) could not write its folder, said before anything runs;
    None when it can."""
    from bankbench.writable import unwritable

    why = unwritable(sweep_dir if resume else sweep_dir.parent)
    if why is None:
        return None
    if resume:
        return (f"--resume {sweep_dir}: cannot write there ({why}); a resume writes into the "
                "sweep: copy it somewhere writable and resume the copy (`bankbench report "
                f"{sweep_dir} --out DIR` reads it without writing)")
    return f"--out {sweep_dir.parent}: cannot write there ({why}); choose another --out"


def _print_summary(report_dir: Path) -> None:
    from analysis.console import summary_table_from

    table = summary_table_from(report_dir)
    if table:
        print("\n" + table)


_OPTION_OF_FIELD = {"server_options": "--set", "agent_kwargs": "--ak", "tasks": "--tasks"}


def _option_name(loc: tuple) -> str:
    """The command-line option a SweepConfig validation error is about (`attempts` → --attempts)."""
    if not loc:
        return "options"
    field = str(loc[0])
    return _OPTION_OF_FIELD.get(field, "--" + field.replace("_", "-"))


def _stop_cleanly_on_signals() -> dict[str, int]:
    """Ctrl-C (SIGINT) and `kill PID` (SIGTERM, what service managers and CI runners send) stop
    the sweep cleanly: Harbor stopped, the sweep's server brought down, the resume command
    printed (bankbench/sweep/stop.py: a signal is never lost)."""
    from bankbench.sweep import stop

    return stop.install()


def _check_max_turns(given: dict, mode: str | None) -> None:
    """A typed --max-turns outside conversation mode is an error, not silently ignored."""
    if "max_turns" in given and mode != "conversation":
        raise SystemExit("bankbench sweep: --max-turns applies to --mode conversation only")


def _explicit_options(args: argparse.Namespace, all_fields: bool = False) -> dict:
    """SweepConfig fields from the command line. For --resume only those the user typed."""
    fields = {
        "levels": args.levels, "attempts": args.attempts, "profile": args.profile,
        "router": args.router, "workers": args.workers,
        "server_options": _key_values(args.server_set, "--set"), "base_url": args.base_url,
        "model": args.model, "source": args.source, "tasks": args.tasks, "limit": args.limit,
        "mode": args.mode, "labels": args.labels, "env": args.env, "shards": args.shards,
        "ray": args.ray, "steady": args.steady, "warmup_share": args.warmup_share,
        "keep_drain": args.keep_drain,
        "agent_kwargs": _key_values(args.ak, "--ak"),
    }
    if getattr(args, "max_turns", None) is not None:
        fields["max_turns"] = args.max_turns
    if all_fields:
        _check_max_turns(fields, fields["mode"])
        return fields
    from contracts.sweep import SweepConfig

    defaults = {name: info.get_default(call_default_factory=True)
                for name, info in SweepConfig.model_fields.items()}
    return {k: v for k, v in fields.items() if v is not None and v != defaults.get(k)}
