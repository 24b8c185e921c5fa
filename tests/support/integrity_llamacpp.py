"""Tool-call integrity on a second real engine with its own tool parser: llama.cpp's OpenAI
server (xllamacpp wheel, SmolLM2-135M) with a ChatML template that renders tools, so
llama.cpp's autoparser recognises `<tool_call>` JSON calls, constrains them with its grammar
and parses them itself (its stream shape differs from Dynamo's: a random id, the arguments in
pieces, finish_reason "tool_calls" or "length"). Used by
`benchmarks/tool_call_integrity.py --llamacpp`.

Four short requests through the FAULT-INJECTING TEST PROXY (tests/support/fault_proxy.py),
which breaks replies only while two requests are in flight: one alone with room for the call,
one alone cut by max_tokens, two together. Expected: the whole call in no class; the cut one
(which llama.cpp's parser drops without a trace: no text, no call) a call cut by length; the
two together in the injected class."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agents.llm import CallInfo, ClientSettings, StreamingClient
from analysis.metrics.integrity import ANY_COLUMN, classify, tool_schemas
from tests.support.fault_proxy import FaultProxy, FaultSchedule
from tests.support.integrity_sweep import TOOL
from tests.support.llamacpp_server import llamacpp_server

TEMPLATE = Path(__file__).resolve().parents[2] / "dynamo" / "templates" / "chatml_tools.jinja"
INJECTED = "missing_call_id"
# One earlier call in the history: the 135M model then opens its reply with <tool_call>, and
# llama.cpp's grammar holds the rest to the tool's schema.
MESSAGES = [
    {"role": "system", "content": "You are a bank agent. Answer every request with a tool call."},
    {"role": "user", "content": "What is the balance of account 11111111?"},
    {"role": "assistant", "content": "", "tool_calls": [{
        "id": "c1", "type": "function", "function": {
            "name": "get_account_balance", "arguments": '{"account_number": "11111111"}'}}]},
    {"role": "user", "content": "What is the balance of account 12345678?"}]
# (classes, calls the client read) per reply
EXPECTED = {"whole": [(set(), 1)], "cut": [({"cut_by_length"}, 0)],
            "together": [({INJECTED}, 1)] * 2}


async def _classes(client: StreamingClient, max_tokens: int, n: int = 1
                   ) -> list[tuple[set[str], int]]:
    info = CallInfo("t", "banking-000", 1, 1, "agent", None)
    results = await asyncio.gather(*(
        client.chat(MESSAGES, info, tools=[TOOL], tool_choice="required",
                    max_tokens=max_tokens, temperature=0) for _ in range(n)))
    out = []
    for result in results:
        record = result.record
        flags = classify(record.tool_stream, record.finish_reason, result.content,
                         tool_schemas([TOOL]), reasoning=bool(record.read_reasoning_chars))
        out.append(({k.removeprefix("tc_") for k, v in flags.items()
                     if v == 1.0 and k != ANY_COLUMN}, len(result.tool_calls)))
    return out


def llamacpp_classes(log_dir: Path) -> tuple[dict[str, list[tuple[set[str], int]]], int]:
    """What each request of EXPECTED came back as, and how many replies the proxy broke."""
    async def run(base_url: str, model: str) -> tuple[dict, int]:
        schedule = FaultSchedule(integrity=INJECTED, integrity_above=1)
        async with FaultProxy(base_url, schedule) as proxy:
            client = StreamingClient(ClientSettings(base_url=proxy.base_url, model=model,
                                                    request_timeout_s=1800))
            try:
                seen = {"whole": await _classes(client, 40),
                        "cut": await _classes(client, 12),
                        "together": await _classes(client, 40, n=2)}
            finally:
                await client.aclose()
            return seen, proxy.corrupted

    with llamacpp_server(log_dir, n_ctx=2048, parallel=2, chat_template=TEMPLATE) as server:
        return asyncio.run(run(server.base_url, server.model))
