"""The mock bank: the only way an agent acts on the customer's behalf inside a task.

    bank tools                                  print the tool schemas (OpenAI function format)
    bank call <tool> ['<json args>'] [--attempt N]
                                                validate, record one intent, print a mock reply
    bank accept <N>                             record that self-evaluation attempt N was kept

Nothing is ever executed: a call is a recorded decision plus a plausible, deterministic reply
shaped by the tool's response schema. `'<json args>'` may be `-` to read the arguments from
stdin; left out, it means `{}`.

Files: tools.json and responses.json beside this script (env BANK_DIR overrides); the intents
log /logs/agent/intents.jsonl (env BANK_INTENTS overrides). When the environment runs the bank
as a service (bankd.py, started by entrypoint.sh as root), `bank` hands the command line to it
and the service writes the log, which the agent's user cannot write; otherwise `bank` runs it
in-process. Attempt default: env BANK_ATTEMPT,
else 1. Exit codes: 0 ok, 2 call rejected (unknown tool, bad JSON, invalid arguments),
64 usage error, 74 intents log not writable, 78 tools.json unreadable (without a readable
responses.json, replies are only generic).

Standard library only; runs on Python 3.8+.
"""

from __future__ import annotations

import json
import os
import sys
import time

from intentlog import append_record, intent_record, intents_path, to_utf8
from toolschema import check_call, parse_arguments, tool_index

TYPE_CHECKING = False  # typing is imported by type checkers only (start-up cost)
if TYPE_CHECKING:
    from typing import Any, Callable

EXIT_OK = 0
EXIT_REJECTED = 2
EXIT_USAGE = 64
EXIT_IOERR = 74
EXIT_CONFIG = 78

USAGE = (
    "usage: bank tools\n"
    "       bank call <tool> ['<json args>'|-] [--attempt N]\n"
    "       bank accept <N>\n"
)


class UsageError(Exception):
    pass


class ConfigError(Exception):
    pass


class Reply:
    """What one command printed and returned (so a service can send it back whole)."""

    def __init__(self) -> None:
        self.code = EXIT_OK
        self.out = b""
        self.err = b""

    def emit(self, payload: Any) -> None:
        self.out += to_utf8(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")


# ---------------------------------------------------------------- configuration


def bank_dir() -> str:
    return os.environ.get("BANK_DIR") or os.path.dirname(os.path.abspath(__file__))


def load_json_file(name: str) -> Any:
    path = os.path.join(bank_dir(), name)
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc


def load_tools() -> list[dict[str, Any]]:
    tools = load_json_file("tools.json")
    if not isinstance(tools, list):
        raise ConfigError("tools.json must hold a JSON list of function tools")
    return tools


# ---------------------------------------------------------------- argument parsing


def parse_positive_int(text: str, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"{what} must be a positive integer, got {text!r}") from None
    if value < 1:
        raise UsageError(f"{what} must be a positive integer, got {text!r}")
    return value


def split_call_args(argv: list[str], read_stdin: Callable[[], str], env_attempt: str | None
                    ) -> tuple[str, str, int]:
    """`<tool> [json|-] [--attempt N]` -> (tool, raw json, attempt)."""
    positional: list[str] = []
    attempt_text: str | None = None
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--attempt":
            if i + 1 >= len(argv):
                raise UsageError("--attempt needs a value")
            attempt_text = argv[i + 1]
            i += 2
            continue
        if arg.startswith("--attempt="):
            attempt_text = arg.split("=", 1)[1]
        else:
            positional.append(arg)
        i += 1
    if not positional:
        raise UsageError("call needs a tool name")
    # JSON the shell split into several words is still this call's arguments: rejoin them and
    # let parsing judge, so the call is recorded (and answered) like any other bad JSON.
    raw = " ".join(positional[1:]) if len(positional) > 1 else "{}"
    if raw == "-":
        raw = read_stdin()
    if attempt_text is None:
        attempt = parse_positive_int(env_attempt, "BANK_ATTEMPT") if env_attempt else 1
    else:
        attempt = parse_positive_int(attempt_text, "--attempt")
    return positional[0], raw, attempt


# ---------------------------------------------------------------- commands


def command_tools(argv: list[str], reply: Reply, context: dict[str, Any]) -> None:
    if argv:
        raise UsageError("tools takes no arguments")
    reply.emit(load_tools())


def command_call(argv: list[str], reply: Reply, context: dict[str, Any]) -> None:
    tool, raw, attempt = split_call_args(argv, context["read_stdin"], context["attempt"])
    parsed_ok, arguments, parse_error = parse_arguments(raw)
    try:
        index = tool_index(load_tools())
    except ConfigError as exc:
        # Keep the decision on record even though it cannot be checked.
        append_record(intent_record(tool, attempt, arguments, [f"bank misconfigured: {exc}"]),
                      with_seq=True)
        raise
    headline, details = check_call(tool, parsed_ok, arguments, parse_error, index)
    errors = [headline] + details if headline else []
    record = append_record(intent_record(tool, attempt, arguments, errors), with_seq=True)
    if headline:
        reply.emit({"error": headline, "details": details, "seq": record["seq"]})
        reply.code = EXIT_REJECTED
        return
    from mockreplies import mock_response

    try:
        responses = load_json_file("responses.json")
    except ConfigError:
        responses = {}
    reply.emit(mock_response(tool, arguments, responses))


def command_accept(argv: list[str], reply: Reply, context: dict[str, Any]) -> None:
    if len(argv) != 1:
        raise UsageError("accept takes exactly one attempt number")
    attempt = parse_positive_int(argv[0], "attempt")
    append_record({"accept": attempt, "ts": time.time()}, with_seq=False)
    reply.emit({"accepted": attempt})


COMMANDS = {"tools": command_tools, "call": command_call, "accept": command_accept}


def run(argv: list[str], read_stdin: Callable[[], str], attempt: str | None) -> Reply:
    """One command line; `read_stdin` gives the arguments for `-`, `attempt` is $BANK_ATTEMPT."""
    reply = Reply()
    if argv and argv[0] in ("-h", "--help", "help"):
        reply.out = to_utf8(__doc__ or USAGE)
        return reply
    try:
        if not argv:
            raise UsageError("no command given")
        command = COMMANDS.get(argv[0])
        if command is None:
            raise UsageError(f"unknown command {argv[0]!r}")
        command(argv[1:], reply, {"read_stdin": read_stdin, "attempt": attempt})
    except UsageError as exc:
        reply.code, reply.err = EXIT_USAGE, to_utf8(f"bank: {exc}\n{USAGE}")
    except ConfigError as exc:
        reply.code, reply.err = EXIT_CONFIG, to_utf8(f"bank: {exc}\n")
    except OSError as exc:
        reply.code = EXIT_IOERR
        reply.err = to_utf8(f"bank: cannot write the intents log {intents_path()}: {exc}\n")
    return reply


def write_reply(reply: Reply) -> int:
    for stream, data in ((sys.stdout, reply.out), (sys.stderr, reply.err)):
        if not data:
            continue
        binary = getattr(stream, "buffer", None)
        if binary is None:  # a replaced stream (embedding, tests) takes text
            stream.write(data.decode("utf-8", "replace"))
        else:
            stream.flush()
            binary.write(data)
            binary.flush()
    return reply.code


def main(argv: list[str]) -> int:
    """Run one command in this process (no bank service) and print its reply."""
    return write_reply(run(argv, sys.stdin.read, os.environ.get("BANK_ATTEMPT")))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
