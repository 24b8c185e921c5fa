"""`bankbench check`: can the banking agent run against this server? (agents/test_agent.py)"""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    from agents.test_agent import add_arguments

    p = sub.add_parser(
        "check",
        help="probe an OpenAI-compatible server the way the agent uses it",
        description="Lists models, streams one completion (TTFT, ITL, tokens), probes tool "
        "calling with tool_choice auto and named, and prints a verdict per step. Exit 0 only "
        "when the agent can run against the server.",
    )
    add_arguments(p)
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from agents.test_agent import main_from_args
    from analysis.metrics.latency import describe

    # Timings by the analysis's own definitions (the agent records raw times only).
    return main_from_args(args, describe)
