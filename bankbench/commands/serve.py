"""`bankbench serve`: start, check, read logs of, scrape and stop an LLM server stack."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# Static so `--help` stays fast (the registry imports pydantic/httpx); a test keeps it in step
# with bankbench.serve.profiles.REGISTRY.
PROFILE_HELP = (
    "cpu-mocker (Dynamo frontend + mocker engine, any machine), "
    "cpu-tiny (Dynamo frontend + SmolLM2-135M via llama.cpp), "
    "gpu-sglang | gpu-vllm | gpu-sglang-disagg (NGC containers, needs Docker + GPUs), "
    "external (an existing OpenAI-compatible URL: --set url=…)"
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve",
        help="start/stop/check the LLM server stack (Dynamo on CPU or GPU, or external)",
        description="Launch, health-check and stop LLM server stacks. `up` returns when the "
        "server answers and records what it started in a state dir, so status/logs/metrics/down "
        "find it again.",
    )
    p.set_defaults(func=lambda a: p.print_help() or 2)
    ssub = p.add_subparsers(dest="serve_command", metavar="ACTION")

    up = ssub.add_parser(
        "up", help="start a stack and wait until it answers",
        description="Start a server stack (its components as process groups, or containers for "
        "the GPU profiles) and return once it answers: the model is listed, the workers are "
        "registered and a one-token completion works. What it started is recorded in the state "
        "dir, so status, logs, metrics and down find it. On failure nothing is left running and "
        "the failing component's log tail is printed.")
    up.add_argument("--profile", required=True, help=PROFILE_HELP)
    up.add_argument("--router", default=None,
                    help="Dynamo router mode: round-robin, kv, random, power-of-two, "
                    "least-loaded, direct, device-aware-weighted; or thompson, bankbench's "
                    "Thompson-sampling router component (cpu-mocker; see docs/serving.md) "
                    "(default: the profile's; round-robin on CPU)")
    up.add_argument("--workers", type=int, default=None,
                    help="number of engine workers (default: the profile's; 1 on CPU)")
    up.add_argument("--port", type=int, default=None,
                    help="frontend HTTP port (default: a free one)")
    up.add_argument("--model", default=None, help="served model name (default per profile)")
    up.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                    help="profile option, repeatable (cpu-mocker: speedup_ratio, replay_trace, "
                    "tool_call_parser, router_session_affinity_ttl_secs, frontend_args, "
                    "mocker_args; see docs/serving.md)")
    up.add_argument("--dry-run", action="store_true",
                    help="print the exact commands (docker run … for the GPU profiles, with "
                    "their environment) in start order, and start nothing")
    _state_dir_arg(up, "where to record the stack (default: <cache>/serve/<profile>)")
    up.set_defaults(func=_up)

    st = ssub.add_parser(
        "status", help="is the stack (or any OpenAI-compatible URL) answering?",
        description="Ask a recorded stack (or --url) for its models and, for Dynamo, its "
        "registered workers, and say which recorded components still run. Exit 0 when it "
        "answers and every component is alive.")
    st.add_argument("--url", default=None, help="check this base URL instead of a recorded stack")
    st.add_argument("--api-key-env", default=None,
                    help="environment variable holding a bearer token for --url")
    _state_dir_arg(st)
    st.set_defaults(func=_status)

    lg = ssub.add_parser(
        "logs", help="print the last lines of each component's log",
        description="Print the last --lines lines of each component's log file (frontend, "
        "workers, router) of a recorded stack.")
    lg.add_argument("--component", default=None, help="frontend, mocker, worker-0, … (default all)")
    lg.add_argument("-n", "--lines", type=int, default=40, help="lines per component (default 40)")
    _state_dir_arg(lg)
    lg.set_defaults(func=_logs)

    dn = ssub.add_parser(
        "down", help="stop everything `up` started",
        description="Stop exactly what `up` recorded in the state dir (SIGTERM, then SIGKILL to "
        "each component's process group; containers for the GPU profiles), nothing else.")
    _state_dir_arg(dn)
    dn.set_defaults(func=_down)

    dr = ssub.add_parser(
        "doctor", help="can this host start a GPU profile? driver, toolkit, image, ports, disk",
        description="Check a host for a GPU profile before the first start: NVIDIA driver "
        "(>= 580 for the CUDA 13 images), the profile's GPUs, Docker and the NVIDIA container "
        "toolkit, the image (pulled on first start otherwise), free ports, the model in the "
        "Hugging Face cache, disk space. Starts nothing; exits 1 when something must be fixed.")
    dr.add_argument("--profile", default="gpu-vllm",
                    help="gpu-vllm (default), gpu-sglang or gpu-sglang-disagg")
    dr.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                    help="profile option, as for `up` (e.g. worker.gpus=0,1)")
    dr.set_defaults(func=_doctor)

    mt = ssub.add_parser(
        "metrics", help="save the frontend's Prometheus /metrics to a file",
        description="Scrape the frontend's Prometheus /metrics (a recorded stack's, or --url) "
        "into a file, as the sweep does before and after each level.")
    mt.add_argument("--out", required=True, type=Path, help="file to write")
    mt.add_argument("--url", default=None, help="base or /metrics URL instead of a recorded stack")
    _state_dir_arg(mt)
    mt.set_defaults(func=_metrics)


def _state_dir_arg(p: argparse.ArgumentParser, text: str | None = None) -> None:
    p.add_argument("--state-dir", type=Path, default=None,
                   help=text or "state dir of the stack, or the profile name of one started in "
                   "its default dir (default: the only one recorded)")


def _fail(exc: Exception) -> int:
    print(f"bankbench serve: {exc}", file=sys.stderr)
    return 1


def _resolve_state_dir(given: Path | None, *, keep_gone: bool = False) -> Path:
    """The state dir the user means: `given` (a dir or a profile name), else the one recorded
    stack still running. Stacks found gone are forgotten with a note (`keep_gone`: still
    offered when nothing runs, so `logs` can show why they died)."""
    from bankbench.serve.api import recorded_stacks
    from bankbench.serve.errors import ServeError
    from bankbench.serve.state import STATE_FILE

    if given is not None:
        if len(given.parts) == 1 and not given.exists():
            # A bare profile name: the stack `serve up --profile NAME` recorded by default.
            from bankbench.serve.state import default_state_dir

            given = default_state_dir(str(given))
        if not (given / STATE_FILE).exists():
            raise ServeError(f"no stack recorded in {given} (no {STATE_FILE})")
        return given
    dirs, gone = recorded_stacks(prune=not keep_gone)
    # A sweep's own stack (<sweep>/server) is the sweep's to stop: never the one meant here.
    owned = [d for d in dirs if _owned_by_sweep(d)]
    dirs = [d for d in dirs if d not in owned]
    for state in gone:
        if keep_gone:
            continue
        print(f"bankbench serve: note: forgot the {state.profile} stack recorded in "
              f"{state.state_dir}: its processes are gone (logs kept in its logs/)",
              file=sys.stderr)
    if not dirs and keep_gone:
        dirs = [s.state_dir for s in gone if s.state_dir is not None]
    if not dirs:
        if owned:
            raise ServeError("no stack started with `bankbench serve up` is running (the "
                             "running sweeps' own stacks stop with their sweeps: "
                             + ", ".join(str(d) for d in owned) + ")")
        raise ServeError("no running stack recorded; start one with `bankbench serve up`")
    if len(dirs) > 1:
        raise ServeError("several stacks running, pass --state-dir DIR (or a profile name): "
                         + "; ".join(_describe(d) for d in dirs))
    return dirs[0]


def _owned_by_sweep(state_dir: Path) -> bool:
    from contracts.sweep import SWEEP_FILE

    return (state_dir.parent / SWEEP_FILE).exists()


def _describe(state_dir: Path) -> str:
    from bankbench.serve.api import load_state

    try:
        state = load_state(state_dir)
        return f"{state.profile} at {state.base_url} ({state_dir})"
    except (FileNotFoundError, ValueError):
        return str(state_dir)


def _up(args: argparse.Namespace) -> int:
    from bankbench.serve.api import check, up
    from bankbench.serve.errors import ServeError
    from bankbench.serve.options import parse_set_args

    try:
        options = parse_set_args(args.sets)
        # A bad name or value is reported alone, before anything claims to start.
        check(args.profile, router=args.router, workers=args.workers, model=args.model,
              options=options)
        if args.dry_run:
            from bankbench.serve.api import dry_run

            print(dry_run(args.profile, router=args.router, workers=args.workers,
                          port=args.port, model=args.model, options=options,
                          state_dir=args.state_dir), end="")
            return 0
        print(f"bankbench: starting {args.profile} …", file=sys.stderr, flush=True)
        state = up(args.profile, router=args.router, workers=args.workers, port=args.port,
                   model=args.model, options=options, state_dir=args.state_dir)
    except ServeError as exc:
        return _fail(exc)
    print(f"base_url: {state.base_url}")
    print(f"model: {state.model}")
    print(f"state_dir: {state.state_dir}")
    return 0


def _status(args: argparse.Namespace) -> int:
    from bankbench.serve.api import load_state, status
    from bankbench.serve.errors import ServeError

    if args.url is None and args.state_dir is None:
        # Status only reads: with several stacks running, show each instead of asking.
        from bankbench.serve.api import recorded_stacks

        running = [d for d in recorded_stacks(prune=False)[0] if not _owned_by_sweep(d)]
        if len(running) > 1:
            codes = [_print_status(status(load_state(d), api_key_env=args.api_key_env), d)
                     for d in running]
            return max(codes)
    try:
        target = args.url or load_state(_resolve_state_dir(args.state_dir))
    except ServeError as exc:
        return _fail(exc)
    return _print_status(status(target, api_key_env=args.api_key_env))


def _print_status(report, state_dir: Path | None = None) -> int:
    if state_dir is not None:
        print(f"== {state_dir}")
    print(f"{report.base_url}: {'OK' if report.ok else 'NOT OK'} — {report.detail}")
    if report.models:
        print(f"models: {', '.join(report.models)}")
    if report.workers_registered is not None:
        print(f"workers registered: {report.workers_registered}")
    for c in report.components:
        where = f"pid {c.pid}" if c.pid else f"container {c.container_id}"
        shown = {True: "running", False: "STOPPED", None: "UNKNOWN"}[c.alive]
        print(f"  {c.name:<12} {shown} ({where})")
    return 0 if report.ok else 1


def _logs(args: argparse.Namespace) -> int:
    from bankbench.procs import tail
    from bankbench.serve.api import load_state
    from bankbench.serve.errors import ServeError

    try:
        state = load_state(_resolve_state_dir(args.state_dir, keep_gone=True))
    except ServeError as exc:
        return _fail(exc)
    comps = [c for c in state.components if args.component in (None, c.name)]
    if not comps:
        names = ", ".join(c.name for c in state.components)
        return _fail(ServeError(f"no component {args.component!r} (components: {names})"))
    for c in comps:
        if c.kind == "container":
            from bankbench.serve.gpu import container_logs

            print(f"==> {c.name} (container {c.container_id}) <==")
            print(container_logs(c.container_id or "", args.lines))
        else:
            print(f"==> {c.name} ({c.log_path}) <==")
            print(tail(c.log_path, args.lines))
    return 0


def _down(args: argparse.Namespace) -> int:
    from bankbench.serve.api import down, load_state
    from bankbench.serve.errors import ServeError

    try:
        state = load_state(_resolve_state_dir(args.state_dir))
        down(state)
    except ServeError as exc:
        return _fail(exc)
    print(f"stopped {state.profile} ({', '.join(c.name for c in state.components)})")
    return 0


def _doctor(args: argparse.Namespace) -> int:
    from bankbench.serve.doctor import diagnose, verdict
    from bankbench.serve.errors import ServeError
    from bankbench.serve.gpu_profiles import load_profile
    from bankbench.serve.options import parse_set_args

    if not args.profile.startswith("gpu-"):
        return _fail(ServeError(f"doctor checks the GPU profiles; {args.profile} needs no check "
                                "(try `bankbench serve up --profile " + args.profile + "`)"))
    try:
        profile = load_profile(args.profile, parse_set_args(args.sets))
    except ServeError as exc:
        return _fail(exc)
    findings = diagnose(profile)
    mark = {True: "ok  ", False: "FAIL", None: "info"}
    for f in findings:
        print(f"[{mark[f.ok]}] {f.check}: {f.detail}")
    print(verdict(profile, findings))
    return 1 if any(f.ok is False for f in findings) else 0


def _metrics(args: argparse.Namespace) -> int:
    import httpx

    from bankbench.serve.api import load_state
    from bankbench.serve.errors import ServeError
    from bankbench.serve.metrics import parse_samples, scrape

    try:
        url = args.url or load_state(_resolve_state_dir(args.state_dir)).metrics_url
        out = scrape(url, args.out)
    except ServeError as exc:
        return _fail(exc)
    except httpx.HTTPError as exc:
        return _fail(ServeError(f"could not read metrics: {type(exc).__name__}: {exc}"))
    print(f"wrote {len(parse_samples(out.read_text()))} samples to {out}")
    return 0
