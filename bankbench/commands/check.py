"""`bankbench check`: can the banking agent run against this server? (agents/test_agent.py)"""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    from agents.test_agent import add_arguments
    from bankbench.commands.sweep import DefaultsHelpFormatter

    p = sub.add_parser(
        "check",
        help="probe an OpenAI-compatible server the way the agent uses it",
        description="Lists models, streams one completion (TTFT, ITL, tokens), probes tool "
        "calling with tool_choice auto and named, then sends the agent's real first request "
        "(a task's tool schemas, the --ak options, their max_tokens) and prints a verdict per "
        "step. A tool mode is suggested only after its first request completed. Exit 0 only "
        "when the agent's first request completed.",
        formatter_class=DefaultsHelpFormatter,
    )
    add_arguments(p)
    p.set_defaults(func=_run)


def sample_first_request():
    """The first scenario of the bundled sample as a built task would present it."""
    from agents.test_agent import FirstRequest
    from contracts.sweep import SweepConfig
    from tasks.banking import render, sample
    from tasks.banking.dataset import validate

    dataset = validate(sample.raw_dataset(), "banking")
    scenario = dataset.scenarios[0]
    mode = SweepConfig.model_fields["mode"].default  # what a sweep builds by default
    tools = [render.openai_tool(tool) for tool in dataset.tools]
    return FirstRequest(render.instruction_md(scenario, mode), tools,
                        f"bundled sample {scenario.scenario_id}")


def _run(args: argparse.Namespace) -> int:
    from agents.test_agent import main_from_args
    from analysis.metrics.latency import describe

    first = None if args.task is not None else sample_first_request()
    # Timings by the analysis's own definitions (the agent records raw times only).
    return main_from_args(args, describe, first)
