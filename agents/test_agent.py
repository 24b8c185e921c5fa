"""Can the agent run against this server? `bankbench check` / `python -m agents.test_agent`.

Steps, each with a verdict: the model is listed; a streamed completion arrives with usage
(TTFT, ITL and token counts printed, measured by the agent's own client); tool calling with
tool_choice "auto" and with a named tool. Exit 0 when the agent can run: the model answers
and streams. Tool-call probes only decide which `tool_mode` to recommend.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agents.options import DEFAULT_BASE_URL, ClientOptions, strip_provider

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
                     describe: Describe = raw_summary) -> list[Probe]:
    from agents.llm import LLMCallFailed, StreamingClient

    steps: list[Probe] = []
    client = StreamingClient(settings)
    try:
        try:
            listed = await client.list_models()
        except Exception as exc:  # any failure here means the URL is not usable
            cause = exc.__cause__ or exc.__context__
            why = f"{exc} ({type(cause).__name__}: {cause})" if cause else str(exc)
            steps.append(Probe("models", "FAIL", f"{settings.base_url}/models: "
                                                f"{client.scrub(why)[:300]}"))
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
    finally:
        await client.aclose()
    return steps


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


def can_run(steps: list[Probe]) -> bool:
    passed = {s.name for s in steps if s.verdict == "PASS"}
    return {"models", "stream"} <= passed


def report(steps: list[Probe], out=sys.stdout) -> None:
    for step in steps:
        print(f"[{step.verdict}] {step.name:<12} {step.detail}", file=out)
    native = any(s.name.startswith("tools:") and s.verdict == "PASS" for s in steps)
    if can_run(steps):
        mode = "native" if any(s.name == "tools:auto" and s.verdict == "PASS" for s in steps) \
            else ("native (named tool calls work; auto did not call)" if native else "text")
        print(f"verdict: the agent can run here; suggested --ak tool_mode={mode.split()[0]}"
              + ("" if mode in ("native", "text") else f"  [{mode}]"), file=out)
    else:
        print("verdict: the agent cannot run against this server", file=out)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--base-url", default=None,
                   help=f"OpenAI-compatible endpoint (default $OPENAI_BASE_URL or "
                        f"{DEFAULT_BASE_URL})")
    p.add_argument("--model", required=True, help="model name as the server lists it")
    key_env = ClientOptions.model_fields["api_key_env"].default
    p.add_argument("--api-key-env", default=key_env,
                   help=f"environment variable holding the API key (default {key_env}; "
                        "a dummy key is used when it is unset)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per request")
    p.add_argument("--max-tokens", type=int, default=64, help="completion tokens per probe")


def main_from_args(args: argparse.Namespace, describe: Describe = raw_summary) -> int:
    import os

    from agents.llm import ClientSettings

    base_url = args.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
    settings = ClientSettings(base_url=base_url, model=strip_provider(args.model) or args.model,
                              api_key_env=args.api_key_env, request_timeout_s=args.timeout,
                              max_attempts=2, backoff_initial_s=0.2)
    print(f"checking {settings.base_url} model {settings.model!r}", flush=True)
    steps = asyncio.run(run_checks(settings, args.max_tokens, describe))
    report(steps)
    return 0 if can_run(steps) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agents.test_agent", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    return main_from_args(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
