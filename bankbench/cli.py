"""The one command line: `bankbench <command> …`.

Each subcommand lives in `bankbench/commands/<name>.py` and exposes `register(subparsers)`; it
parses options and calls the package that owns the work. Heavy imports stay inside the command
functions so that `bankbench --help` answers at once.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from bankbench import __version__

# Order here is the order in `--help`.
COMMANDS = ("tasks", "serve", "check", "sweep", "capacity", "report", "judge", "export",
            "agent-server")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bankbench",
        description=(
            "Load an LLM server with banking-agent traffic and measure, on the same run, how fast "
            "it answers (TTFT, ITL, throughput) and whether the agent still picks the right tools "
            "(Tool Selection Quality)."
        ),
    )
    parser.add_argument("--version", action="version", version=f"bankbench {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        importlib.import_module(f"bankbench.commands.{name.replace('-', '_')}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("bankbench: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
