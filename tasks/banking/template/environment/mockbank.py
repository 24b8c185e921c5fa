"""The mock bank: the only way an agent acts on the customer's behalf inside a task.

    bank tools                                  print the tool schemas (OpenAI function format)
    bank call <tool> ['<json args>'] [--attempt N]
                                                validate, record one intent, print a mock reply
    bank accept <N>                             record that self-evaluation attempt N was kept
    bank say '<message>'|- [--attempt N]        (conversation-mode tasks) say something to the
                                                customer, print its answer (a SayReply)

Nothing is ever executed: a call is a recorded decision plus a plausible, deterministic reply
shaped by the tool's response schema. `'<json args>'` may be `-` to read the arguments from
stdin; left out, it means `{}`.

Files: tools.json and responses.json beside this script (env BANK_DIR overrides); the intents
log /logs/agent/intents.jsonl (env BANK_INTENTS overrides). When the environment runs the bank
as a service (bankd.py, started by entrypoint.sh as root), `bank` hands the command line to it
and the service writes the log, which the agent's user cannot write; otherwise `bank` runs it
in-process. Attempt default: env BANK_ATTEMPT,
else 1. Exit codes: 0 ok, 2 call rejected (unknown tool, bad JSON, invalid arguments),
64 usage error, 74 intents or conversation log not writable, 75 the llm customer's endpoint
failed (nothing recorded; the failed request is in the reply), 78 tools.json or customer.json
unreadable (without a readable responses.json, replies are only generic).

`say` (see customer.py and docs/conversation.md): the customer brief is customer.json beside
this script, readable by the service (root) only; the exchange goes to
/logs/agent/conversation.jsonl (env BANK_CONVERSATION overrides). Every `call` record carries
`turn`: how many times the attempt has said something so far (the customer turn it works on).

Standard library only; runs on Python 3.8+.
"""

from __future__ import annotations

import json
import os
import sys
import time

from convlog import current_turn
from intentlog import LogFull, append_record, intent_record, intents_path, to_utf8
from toolschema import check_call, parse_arguments, tool_index

TYPE_CHECKING = False  # typing is imported by type checkers only (start-up cost)
if TYPE_CHECKING:
    from typing import Any, Callable

EXIT_OK = 0
EXIT_REJECTED = 2
EXIT_USAGE = 64
EXIT_IOERR = 74
EXIT_CUSTOMER = 75
EXIT_CONFIG = 78
CUSTOMER_FILE = "customer.json"
CUSTOMER_KINDS = ("scripted", "llm")
MAX_SAY_BYTES = 16 * 1024  # the log keeps at most this much of one agent message
# What `say` takes from the caller's environment (contracts/conversation.py CUSTOMER_ENV).
CUSTOMER_ENV = ("BANK_CUSTOMER", "BANK_USER_BASE_URL", "BANK_USER_MODEL", "BANK_USER_API_KEY")

USAGE = (
    "usage: bank tools\n"
    "       bank call <tool> ['<json args>'|-] [--attempt N]\n"
    "       bank accept <N>\n"
    "       bank say '<message>'|- [--attempt N]\n"
)


class UsageError(Exception):
    pass


class ConfigError(Exception):
    pass


class LogError(Exception):
    """A log could not be written (the message names it)."""


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


def split_attempt(argv: list[str], env_attempt: str | None) -> tuple[list[str], int]:
    """(the positional words, the attempt) from `... [--attempt N]` and $BANK_ATTEMPT."""
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
    if attempt_text is None:
        attempt = parse_positive_int(env_attempt, "BANK_ATTEMPT") if env_attempt else 1
    else:
        attempt = parse_positive_int(attempt_text, "--attempt")
    return positional, attempt


def split_call_args(argv: list[str], read_stdin: Callable[[], str], env_attempt: str | None
                    ) -> tuple[str, str, int]:
    """`<tool> [json|-] [--attempt N]` -> (tool, raw json, attempt)."""
    positional, attempt = split_attempt(argv, env_attempt)
    if not positional:
        raise UsageError("call needs a tool name")
    # JSON the shell split into several words is still this call's arguments: rejoin them and
    # let parsing judge, so the call is recorded (and answered) like any other bad JSON.
    raw = " ".join(positional[1:]) if len(positional) > 1 else "{}"
    if raw == "-":
        raw = read_stdin()
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
        record = intent_record(tool, attempt, arguments, [f"bank misconfigured: {exc}"])
        record["turn"] = conversation_turn(attempt)
        append_record(record, with_seq=True)
        raise
    headline, details = check_call(tool, parsed_ok, arguments, parse_error, index)
    errors = [headline] + details if headline else []
    record = intent_record(tool, attempt, arguments, errors)
    record["turn"] = conversation_turn(attempt)
    record = append_record(record, with_seq=True)
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


def conversation_turn(attempt: int) -> int:
    """The customer turn the attempt works on (0 without a conversation); an unreadable
    conversation log counts as none, so a call is never lost over it."""
    try:
        return current_turn(attempt)
    except OSError:
        return 0


def command_say(argv: list[str], reply: Reply, context: dict[str, Any]) -> None:
    positional, attempt = split_attempt(argv, context["attempt"])
    if not positional:
        raise UsageError("say needs a message for the customer")
    message = " ".join(positional)
    if message == "-":
        message = context["read_stdin"]()
    if not message.strip():
        raise UsageError("say needs a non-empty message")
    settings = context.get("customer_env") or {}
    kind = settings.get("BANK_CUSTOMER") or "scripted"
    if kind not in CUSTOMER_KINDS:
        raise UsageError(f"BANK_CUSTOMER must be one of {', '.join(CUSTOMER_KINDS)}, got {kind!r}")
    from convlog import Locked, agent_says, attempt_history, conversation_path
    from customer import BriefError, CustomerError, load_brief

    try:
        brief = load_brief(os.path.join(bank_dir(), CUSTOMER_FILE))
    except BriefError as exc:
        raise ConfigError(f"{exc} (say needs a conversation-mode task)") from None
    try:
        with Locked() as log:
            history = attempt_history(log.entries, attempt)
            said = [e for e in history if e.get("speaker") == "customer" and e.get("turn", 0) > 0]
            if said and said[-1].get("ended"):
                # Over: the same last answer again, and nothing recorded.
                reply.emit(say_reply(said[-1], kind, []))
                return
            turn = agent_says(history) + 1
            try:
                line, calls = customer_line(kind, brief, history, message, attempt, turn,
                                            settings)
            except CustomerError as exc:
                reply.emit({"error": str(exc), "simulator_calls": exc.calls})
                reply.code, reply.err = EXIT_CUSTOMER, to_utf8(f"bank: {exc}\n")
                return
            lines = [] if history else [
                {"attempt": attempt, "turn": 0, "speaker": "customer",
                 "text": brief["first_message"], "goal_index": None, "kind": "first_message"}]
            lines.append({"attempt": attempt, "turn": turn - 1, "speaker": "agent",
                          "text": clip_message(message)})
            lines.append(dict(line, attempt=attempt, turn=turn, speaker="customer",
                              customer_kind=kind, customer=customer_identity(kind, settings)))
            written = log.append(lines)
    except OSError as exc:
        raise LogError(f"cannot write the conversation log {conversation_path()}: {exc}"
                       ) from None
    reply.emit(say_reply(written[-1], kind, calls))


def customer_identity(kind: str, settings: dict[str, str]) -> str:
    """The customer as a report names it: the scripted one's code hash, or the llm one's model,
    endpoint host and prompt hash (never its key)."""
    if kind == "llm":
        from customer_llm import llm_identity

        return llm_identity(settings)
    from customer import scripted_identity

    return scripted_identity()


def customer_line(kind: str, brief: dict[str, Any], history: list[dict[str, Any]],
                  message: str, attempt: int, turn: int, settings: dict[str, str]
                  ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The customer's answer at `turn` (the turn limit applied) and the model calls made."""
    from customer import scripted_reply, turn_limit_line

    calls: list[dict[str, Any]] = []
    if kind == "llm":
        from customer_llm import llm_reply

        line, calls = llm_reply(brief, history, message, settings, attempt, turn)
    else:
        line = scripted_reply(brief, history, message)
    if turn >= brief["max_turns"] and not line["ended"]:
        line = dict(line, ended=True, end_reason="turn_limit")
        if kind == "scripted":
            line.update(text=turn_limit_line(brief), goal_index=None, kind="turn_limit")
    return line, calls


def clip_message(message: str) -> str:
    data = to_utf8(message)
    if len(data) <= MAX_SAY_BYTES:
        return message
    return data[:MAX_SAY_BYTES].decode("utf-8", "ignore") + " [...]"


def say_reply(line: dict[str, Any], kind: str, calls: list[dict[str, Any]]) -> dict[str, Any]:
    """The SayReply printed for a customer line (contracts/conversation.py)."""
    return {"turn": line["turn"], "customer": line["text"], "ended": bool(line.get("ended")),
            "end_reason": line.get("end_reason"),
            "customer_kind": line.get("customer_kind") or kind, "simulator_calls": calls}


COMMANDS = {"tools": command_tools, "call": command_call, "accept": command_accept,
            "say": command_say}


def run(argv: list[str], read_stdin: Callable[[], str], attempt: str | None,
        customer_env: dict[str, str] | None = None) -> Reply:
    """One command line; `read_stdin` gives the arguments for `-`, `attempt` is $BANK_ATTEMPT,
    `customer_env` the caller's CUSTOMER_ENV variables (`say` only; never recorded)."""
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
        command(argv[1:], reply, {"read_stdin": read_stdin, "attempt": attempt,
                                  "customer_env": customer_env})
    except UsageError as exc:
        reply.code, reply.err = EXIT_USAGE, to_utf8(f"bank: {exc}\n{USAGE}")
    except ConfigError as exc:
        reply.code, reply.err = EXIT_CONFIG, to_utf8(f"bank: {exc}\n")
    except LogError as exc:
        reply.code, reply.err = EXIT_IOERR, to_utf8(f"bank: {exc}\n")
    except LogFull as exc:
        reply.code, reply.err = EXIT_REJECTED, to_utf8(f"bank: {exc}\n")
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
    customer_env = {k: os.environ[k] for k in CUSTOMER_ENV if k in os.environ}
    return write_reply(run(argv, sys.stdin.read, os.environ.get("BANK_ATTEMPT"), customer_env))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
