"""`bankbench agent-server`: the banking agent behind HTTP for NeMo Evaluator agent targets."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _key_value(item: str) -> tuple[str, str]:
    key, sep, value = item.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{item!r}: expected key=value")
    return key, value


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "agent-server",
        help="serve the banking agent over HTTP (NeMo Evaluator generic and NAT formats)",
        description=(
            "Run the banking agent as an HTTP endpoint. Each request runs one episode against a "
            "private copy of a task's mock bank and records it like a Harbor trial "
            "(<out>/<request id>/agent/llm_calls.jsonl, trajectory.json, agent_status.json, "
            "intents.jsonl). POST /invoke {\"scenario\": id} or {\"message\": text} answers "
            "{answer, trajectory} (NeMo Evaluator format `generic`); POST /generate/full "
            "{\"input_message\": text or scenario id} answers the NeMo Agent Toolkit SSE stream "
            "(format `nemo_agent_toolkit`). See docs/agent-server.md."
        ),
    )
    p.add_argument("--tasks", type=Path, required=True, metavar="DIR",
                   help="Tasks folder from `bankbench tasks build` (scenario ids are its "
                        "task folder names).")
    p.add_argument("-m", "--model", default=None,
                   help="Model name as the LLM server lists it (or --ak model=…).")
    p.add_argument("--ak", action="append", default=[], type=_key_value, metavar="KEY=VALUE",
                   help="Agent option, repeatable, as in `harbor run --ak` (base_url, "
                        "api_key_env, tool_mode, self_eval, …; see docs/agent.md). The API key "
                        "is read from the variable api_key_env names, never stored.")
    p.add_argument("--host", default="127.0.0.1",
                   help="Address to listen on (default: %(default)s).")
    p.add_argument("--port", type=int, default=8088, help="Port (default: %(default)s).")
    p.add_argument("--out", type=Path, default=Path("agent-server-runs"), metavar="DIR",
                   help="Folder for each request's records (default: %(default)s).")
    p.add_argument("--max-concurrency", type=int, default=4, metavar="N",
                   help="Episodes run at once; more get 429 + Retry-After (default: "
                        "%(default)s).")
    p.add_argument("--request-timeout", type=float, default=600.0, metavar="S",
                   help="Seconds one episode may take before it is cancelled (default: "
                        "%(default)s).")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from agents.options import parse_options, strip_provider
    from bankbench.agent_server.episode import scenario_ids
    from bankbench.agent_server.models import ServerConfig

    def fail(message: str) -> int:
        print(f"bankbench agent-server: {message}", file=sys.stderr)
        return 2

    try:
        options = parse_options(dict(args.ak))
    except ValueError as exc:
        return fail(str(exc))
    model = options.model or strip_provider(args.model)
    if not model:
        return fail("no model; pass -m <model> or --ak model=<name>")
    if not args.tasks.is_dir():
        return fail(f"{args.tasks} is not a folder (build one with `bankbench tasks build`)")
    known = scenario_ids(args.tasks)
    if not known:
        return fail(f"{args.tasks} holds no task with environment/bank")
    try:
        config = ServerConfig(tasks_dir=args.tasks.resolve(), out_dir=args.out.resolve(),
                              agent=options, model=model,
                              max_concurrency=args.max_concurrency,
                              request_timeout_s=args.request_timeout)
    except ValidationError as exc:
        return fail("; ".join(e["msg"] for e in exc.errors(include_url=False)))
    config.out_dir.mkdir(parents=True, exist_ok=True)

    import uvicorn

    from bankbench.agent_server.app import create_app

    print(f"bankbench agent-server: {len(known)} scenarios from {config.tasks_dir}; agent → "
          f"{options.base_url} model {model}; records in {config.out_dir}", file=sys.stderr)
    print(f"  generic:            POST http://{args.host}:{args.port}/invoke", file=sys.stderr)
    print(f"  nemo_agent_toolkit: http://{args.host}:{args.port} (POST /generate/full)",
          file=sys.stderr)
    uvicorn.run(create_app(config), host=args.host, port=args.port, log_level="warning",
                timeout_graceful_shutdown=5)
    return 0
