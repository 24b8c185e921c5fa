"""Start `dynamo.mocker` with a tool-call (and reasoning) parser on its model card.

The 1.6.1 mocker CLI has no flag for the parsers, yet the frontend only parses tool calls out
of generated text when the worker's model card names a parser. The mocker builds each worker's
card from `dynamo.mocker.config.build_runtime_config`; this launcher wraps that function so the
returned `ModelRuntimeConfig` carries the parsers, then runs the stock mocker main.

Usage (Dynamo venv): python mocker.py [--tool-call-parser NAME] [--reasoning-parser NAME]
                     <any dynamo.mocker arguments>
"""

from __future__ import annotations

import argparse
import sys


def main() -> None:
    own = argparse.ArgumentParser(add_help=False)
    own.add_argument("--tool-call-parser", default=None)
    own.add_argument("--reasoning-parser", default=None)
    ours, rest = own.parse_known_args(sys.argv[1:])
    sys.argv = [sys.argv[0], *rest]

    import dynamo.mocker.main as mocker_main
    from dynamo._core import get_reasoning_parser_names, get_tool_parser_names

    if ours.tool_call_parser and ours.tool_call_parser not in get_tool_parser_names():
        sys.exit(f"unknown tool-call parser {ours.tool_call_parser!r}; "
                 f"known: {', '.join(sorted(get_tool_parser_names()))}")
    if ours.reasoning_parser and ours.reasoning_parser not in get_reasoning_parser_names():
        sys.exit(f"unknown reasoning parser {ours.reasoning_parser!r}; "
                 f"known: {', '.join(sorted(get_reasoning_parser_names()))}")

    stock_build = mocker_main.build_runtime_config

    def build_with_parsers(engine_args):
        block_size, runtime_config = stock_build(engine_args)
        if ours.tool_call_parser:
            runtime_config.tool_call_parser = ours.tool_call_parser
        if ours.reasoning_parser:
            runtime_config.reasoning_parser = ours.reasoning_parser
        return block_size, runtime_config

    # main.py imported the function by name, so the wrapper goes into main's namespace.
    mocker_main.build_runtime_config = build_with_parsers
    mocker_main.main()


if __name__ == "__main__":
    main()
