"""The one command line: `bankbench <command> …`.

Each subcommand lives in `bankbench/commands/<name>.py` and exposes `register(subparsers)`; it
parses options and calls the package that owns the work. Heavy imports stay inside the command
functions so that `bankbench --help` answers at once.
"""

from __future__ import annotations

import argparse
import difflib
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


def _unknown_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace,
                       extras: list[str]) -> None:
    """Refuse arguments the command does not know with the command's own usage and, for a
    misspelt option, the closest one it has (argparse would show the top-level usage)."""
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    command = commands.choices[args.command]
    known = [o for action in command._actions for o in action.option_strings]
    hints = []
    for extra in extras:
        name = extra.split("=", 1)[0]
        close = difflib.get_close_matches(name, known, n=1) if name.startswith("-") else []
        if close:
            hints.append(f"{name}: did you mean {close[0]}?")
    command.error(f"unrecognized arguments: {' '.join(extras)}"
                  + (f" ({'; '.join(hints)})" if hints else ""))


def main(argv: list[str] | None = None) -> int:
    # Building the parser imports every command module (pandas, pydantic, Harbor for some): a
    # Ctrl-C there is as much the user's as one during the work, and gets the same one line.
    try:
        parser = build_parser()
        args, extras = parser.parse_known_args(argv)
        if extras:
            _unknown_arguments(parser, args, extras)
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("bankbench: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
