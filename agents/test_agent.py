"""Can the agent run against this server? `bankbench check` / `python -m agents.test_agent`.

Steps, each with a verdict: the model is listed; a streamed completion arrives with usage
(TTFT, ITL and token counts printed, measured by the agent's own client); tool calling with
tool_choice "auto" and with a named tool; then the agent's real first request (a task's tool
schemas, the chosen `--ak` options, their max_tokens) in the chosen tool mode, or, when none is
chosen, in native mode and, if native tool calls do not work, in text mode. A mode is only
recommended after its first request completed, so the verdict holds for the sweep: exit 0
only when that request completed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agents.options import (
    DEFAULT_BASE_URL,
    BankingAgentOptions,
    ClientOptions,
    key_values,
    parse_options,
    strip_provider,
)
from contracts.tools import TOOLS_FILE, read_tools

if TYPE_CHECKING:  # the client (httpx) loads only when a check runs: `--help` stays fast
    from agents.llm import CallInfo, ClientSettings, StreamingClient
    from contracts.llm_calls import LLMCallRecord

# How a request's timing is shown. `bankbench check` passes the analysis's own derivation
# (analysis.metrics.latency.describe); standalone, the agent (which never imports the
# analysis) shows what it knows without deriving times itself.
Describe = Callable[["LLMCallRecord"], str]

PROBE_TOOL = {"type": "function", "function": {
    "name": "get_account_balance",
    "description": "Current balance of one of the customer's accounts.",
    "parameters": {"type": "object", "properties": {
        "account_number": {"type": "string", "description": "8-12 digits"},
        "account_type": {"type": "string", "enum": ["checking", "savings"]}},
        "required": ["account_number", "account_type"]}}}
PROBE_ASK = "What is the balance of my checking account 12345678? Use the tool."


@dataclass
class Probe:
    name: str
    verdict: str  # PASS | WARN | FAIL
    detail: str


@dataclass
class FirstRequest:
    """What the agent's first request is built from: a task's instruction and tool schemas."""

    instruction: str
    tools: list[dict]
    source: str  # where they came from, for the report


def read_task(task_dir: Path) -> FirstRequest:
    """The first request's parts from a built task folder (instruction.md,
    environment/tools.json: what the bank inside the task serves to the agent)."""
    try:
        instruction = (task_dir / "instruction.md").read_text(encoding="utf-8")
        tools = read_tools(task_dir / "environment" / TOOLS_FILE)
    except (OSError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
        raise ValueError(f"--task {task_dir}: not a built bankbench task ({exc})") from None
    return FirstRequest(instruction, [tool.model_dump(exclude_unset=True) for tool in tools],
                        f"task {task_dir.name}")


def _info(step: int) -> CallInfo:
    from agents.llm import CallInfo

    return CallInfo("check", "check", 1, step, "agent", None, request_index=step)


def raw_summary(rec: LLMCallRecord) -> str:
    """The default `Describe`: counts only (timings: `bankbench check`)."""
    def known(n: int | None) -> str:
        return "unknown" if n is None else str(n)

    return (f"{len(rec.read_ns)} content-bearing reads, tokens {known(rec.prompt_tokens)} in / "
            f"{known(rec.completion_tokens)} out (timings: bankbench check)")


async def run_checks(settings: ClientSettings, max_tokens: int = 64,
                     describe: Describe = raw_summary, first: FirstRequest | None = None,
                     options: BankingAgentOptions | None = None,
                     chosen_mode: str | None = None) -> list[Probe]:
    from agents.llm import LLMCallFailed, StreamingClient

    steps: list[Probe] = []
    client = StreamingClient(settings)
    try:
        try:
            listed = await client.list_models()
        except Exception as exc:  # any failure here means the URL is not usable
            cause = exc.__cause__ or exc.__context__
            status = getattr(getattr(exc, "response", None), "status_code", None)
            why = (f"answered HTTP {status}" if status is not None
                   else f"{exc} ({type(cause).__name__}: {cause})" if cause else str(exc))
            why = " ".join(why.split())  # one line
            steps.append(Probe("models", "FAIL", f"{settings.base_url}/models: "
                                                f"{client.scrub(why)[:300]}"
                                                f"{_api_root_hint(exc, settings.base_url)}"))
            return steps
        if settings.model not in listed:
            steps.append(Probe("models", "FAIL", f"model {settings.model!r} not served; "
                                                f"listed: {', '.join(listed) or 'none'}"))
            return steps
        steps.append(Probe("models", "PASS", f"{len(listed)} listed, {settings.model!r} among "
                                            "them"))
        try:
            reply = await client.chat([{"role": "user", "content": "Say hello to a customer."}],
                                      _info(1), max_tokens=max_tokens)
        except LLMCallFailed as exc:
            steps.append(Probe("stream", "FAIL", str(exc)[:300]))
            return steps
        rec = reply.record
        if not rec.read_ns:
            steps.append(Probe("stream", "FAIL", "no content-bearing chunk arrived"))
            return steps
        steps.append(Probe("stream", "PASS", describe(rec)))
        if rec.prompt_tokens is None or rec.completion_tokens is None:
            steps.append(Probe("usage", "WARN", "no usage in the stream: token counts will be "
                                               "missing from llm_calls.jsonl"))
        else:
            steps.append(Probe("usage", "PASS", f"cached tokens reported: "
                                               f"{rec.cached_tokens is not None}"))
        for name, choice in (("tools:auto", "auto"),
                             ("tools:named", {"type": "function",
                                              "function": {"name": "get_account_balance"}})):
            steps.append(await _probe_tools(client, name, choice, max_tokens, describe))
        if first is not None:
            opts = options or parse_options({})
            modes = [chosen_mode] if chosen_mode else ["native", "text"]
            for mode in modes:
                probe = await _probe_first(client, first, opts, mode, describe)
                steps.append(probe)
                if probe.verdict == "PASS":
                    break
    finally:
        await client.aclose()
    return steps


def _api_root_hint(exc: Exception, base_url: str) -> str:
    """The question to ask when the server answered, but not as an OpenAI API root would."""
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if status in (404, 405) or (status is None and isinstance(exc, ValueError)):
        if base_url.rstrip("/").endswith("/v1"):
            return "; is --base-url the OpenAI API root (ending in /v1)?"
        return ("; is --base-url the OpenAI API root? it does not end in /v1 "
                "(e.g. http://host:8000/v1)")
    return ""


async def _probe_tools(client: StreamingClient, name: str, choice, max_tokens: int,
                       describe: Describe) -> Probe:
    from agents.llm import LLMCallFailed

    try:
        reply = await client.chat([{"role": "user", "content": PROBE_ASK}], _info(2),
                                  tools=[PROBE_TOOL], tool_choice=choice,
                                  max_tokens=max(max_tokens, 128))
    except LLMCallFailed as exc:
        return Probe(name, "WARN", f"request failed: {str(exc)[:200]}")
    calls = [t for t in reply.tool_calls if t.name == "get_account_balance"]
    if not calls:
        return Probe(name, "WARN", f"no tool call (text: {reply.content[:80]!r}); "
                                  f"{describe(reply.record)}")
    try:
        args_ok = isinstance(json.loads(calls[0].arguments), dict)
    except json.JSONDecodeError:
        args_ok = False
    verdict = "PASS" if args_ok else "WARN"
    return Probe(name, verdict, f"{calls[0].name}({calls[0].arguments[:80]}); "
                               f"{describe(reply.record)}")


async def _probe_first(client: StreamingClient, first: FirstRequest,
                       options: BankingAgentOptions, mode: str, describe: Describe) -> Probe:
    """Send the agent's first request exactly as a trial in `mode` would (react builds both).

    PASS: it completed and, in native mode, the model called a tool the task has; WARN: it
    completed without a usable call; FAIL: the server refused or broke it off (a prompt
    larger than the context is the usual cause).
    """
    from agents.llm import LLMCallFailed
    from agents.react import opening_messages, request_params

    opts = options.model_copy(update={"tool_mode": mode})
    messages = opening_messages(first.instruction, first.tools, mode)
    params = request_params(first.tools, opts, 1)
    size = len(json.dumps([messages, params.get("tools")]))
    name = f"agent:{mode}"
    what = (f"{first.source}, {len(first.tools)} tools, max_tokens={opts.max_tokens}, "
            f"request {size:,} chars (~{size / 4000:.1f}k tokens)")
    try:
        reply = await client.chat(messages, _info(3), **params)
    except LLMCallFailed as exc:
        return Probe(name, "FAIL", f"{what}: did not complete: {str(exc)[:240]}")
    rec = reply.record
    done = f"{what}: completed, prompt {_known(rec.prompt_tokens)} tokens; {describe(rec)}"
    if mode == "text":
        from agents import text_protocol

        parsed = text_protocol.parse_reply(reply.content)
        usable = parsed.action is not None or parsed.final_answer is not None
        return Probe(name, "PASS" if usable else "WARN",
                     done + ("" if usable else f"; unreadable reply {reply.content[:60]!r}"))
    names = {t.get("function", {}).get("name") for t in first.tools}
    called = [t.name for t in reply.tool_calls if t.name in names]
    if called:
        return Probe(name, "PASS", f"{done}; called {', '.join(called[:3])}")
    return Probe(name, "WARN", f"{done}; no call of a task tool (text: {reply.content[:60]!r})")


def _known(n: int | None) -> str:
    return "unknown" if n is None else str(n)


def can_run(steps: list[Probe]) -> bool:
    passed = {s.name for s in steps if s.verdict == "PASS"}
    if not {"models", "stream"} <= passed:
        return False
    agent = [s for s in steps if s.name.startswith("agent:")]
    # With a first request tried, the agent can run only if one completed (PASS or WARN).
    return not agent or any(s.verdict != "FAIL" for s in agent)


def report(steps: list[Probe], out=None) -> None:
    # sys.stdout looked up at the call, not bound at import: a redirect in force then is obeyed.
    out = out if out is not None else sys.stdout
    for step in steps:
        print(f"[{step.verdict}] {step.name:<12} {step.detail}", file=out)
    agent = [s for s in steps if s.name.startswith("agent:")]
    if agent:
        _agent_verdict(steps, agent, out)
        return
    native = any(s.name.startswith("tools:") and s.verdict == "PASS" for s in steps)
    if can_run(steps):
        mode = "native" if any(s.name == "tools:auto" and s.verdict == "PASS" for s in steps) \
            else ("native (named tool calls work; auto did not call)" if native else "text")
        print(f"verdict: the agent can run here; suggested --ak tool_mode={mode.split()[0]}"
              + ("" if mode in ("native", "text") else f"  [{mode}]"), file=out)
    else:
        print("verdict: the agent cannot run against this server", file=out)


def _agent_verdict(steps: list[Probe], agent: list[Probe], out) -> None:
    """The verdict from the first requests actually sent: only a tried mode is suggested."""
    if not can_run(steps):
        tried = ", ".join(s.name.split(":")[1] for s in agent)
        print(f"verdict: the agent cannot run against this server: its first request failed "
              f"in every mode tried ({tried}); see agent:* above (a smaller task, a larger "
              "server context or a smaller --ak max_tokens may help)", file=out)
        return
    best = next((s for s in agent if s.verdict == "PASS"),
                next(s for s in agent if s.verdict != "FAIL"))
    mode = best.name.split(":")[1]
    note = "" if best.verdict == "PASS" else (
        "  [its first request completed, but no usable tool call came back: expect low TSQ]")
    print(f"verdict: the agent can run here; suggested --ak tool_mode={mode} (its first "
          f"request was tried){note}", file=out)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--base-url", default=None,
                   help=f"OpenAI-compatible endpoint (default $OPENAI_BASE_URL or "
                        f"{DEFAULT_BASE_URL})")
    p.add_argument("--model", required=True, help="model name as the server lists it")
    key_env = ClientOptions.model_fields["api_key_env"].default
    p.add_argument("--api-key-env", default=key_env,
                   help="environment variable holding the API key (default: %(default)s; "
                        "a dummy key is used when it is unset)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per request")
    p.add_argument("--max-tokens", type=int, default=64,
                   help="completion tokens per short probe (the agent's first request uses "
                        "--ak max_tokens, as the sweep does)")
    p.add_argument("--task", type=Path, default=None,
                   help="a built task folder whose first request is sent (default with "
                        "`bankbench check`: the first scenario of the bundled sample)")
    p.add_argument("--ak", action="append", default=[], metavar="KEY=VALUE",
                   help="agent option as the sweep takes it (tool_mode, tool_choice, "
                        "max_tokens, temperature…); tool_mode given: only that mode is tried")


def agent_options(items: list[str]) -> tuple[BankingAgentOptions, str | None]:
    """`--ak KEY=VALUE` items → validated options and the tool mode chosen (None: not given)."""
    kwargs = key_values(items)
    return parse_options(kwargs), kwargs.get("tool_mode")


def main_from_args(args: argparse.Namespace, describe: Describe = raw_summary,
                   first: FirstRequest | None = None) -> int:
    import os

    from agents.llm import ClientSettings

    try:
        options, chosen = agent_options(args.ak)
        if args.task is not None:
            first = read_task(args.task)
    except ValueError as exc:
        print(f"check: {exc}", file=sys.stderr)
        return 2
    base_url = args.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
    settings = ClientSettings(base_url=base_url, model=strip_provider(args.model) or args.model,
                              api_key_env=args.api_key_env, request_timeout_s=args.timeout,
                              max_attempts=2, backoff_initial_s=0.2)
    print(f"checking {settings.base_url} model {settings.model!r}", flush=True)
    if first is None:
        print("(no --task: the agent's own first request is not tried)", flush=True)
    steps = asyncio.run(run_checks(settings, args.max_tokens, describe, first, options,
                                   chosen))
    report(steps)
    return 0 if can_run(steps) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agents.test_agent", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    return main_from_args(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
