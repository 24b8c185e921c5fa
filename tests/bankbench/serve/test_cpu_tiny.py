"""The cpu-tiny stack: real Dynamo frontend + llama.cpp worker + SmolLM2-135M, end to end.

llama.cpp comes from the prebuilt xllamacpp wheel (downloaded once, nothing compiled).
"""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import threading
import time

import httpx
import pytest

from bankbench.serve import llamacpp
from bankbench.serve.errors import ServeError
from tests.support.cpu_tiny import SLOTS, chat, cpu_tiny_stack

BALANCE_TOOL = {
    "type": "function",
    "function": {
        "name": "get_account_balance",
        "description": "Get the balance of one bank account.",
        "parameters": {
            "type": "object",
            "properties": {
                "account_number": {"type": "string"},
                "account_type": {"type": "string", "enum": ["checking", "savings"]},
            },
            "required": ["account_number", "account_type"],
        },
    },
}
TRANSFER_TOOL = {
    "type": "function",
    "function": {
        "name": "transfer_funds",
        "description": "Move money between two accounts.",
        "parameters": {
            "type": "object",
            "properties": {
                "from_account": {"type": "string"},
                "to_account": {"type": "string"},
                "amount": {"type": "number"},
            },
            "required": ["from_account", "to_account", "amount"],
        },
    },
}
TOOLS = {t["function"]["name"]: t for t in (BALANCE_TOOL, TRANSFER_TOOL)}
ASK_BALANCE = [{"role": "user", "content": "What is the balance of my savings account 12345?"}]
PY_TYPES = {"string": str, "number": (int, float), "integer": int, "boolean": bool}


def assert_matches_schema(args: dict, schema: dict) -> None:
    """The subset of JSON Schema the test tools use: required keys, primitive types, enums."""
    assert set(schema["required"]) <= set(args), args
    assert set(args) <= set(schema["properties"]), args
    for key, value in args.items():
        prop = schema["properties"][key]
        assert isinstance(value, PY_TYPES[prop["type"]]), (key, value)
        if "enum" in prop:
            assert value in prop["enum"], (key, value)


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    with cpu_tiny_stack(tmp_path_factory.mktemp("cpu-tiny") / "state") as state:
        yield state


def stream(stack, **body) -> tuple[list[int], list[dict]]:
    """Stream a chat completion; return arrival times (ns) of content chunks and all chunks."""
    body = {"model": stack.model, "stream": True, "stream_options": {"include_usage": True}, **body}
    times, chunks = [], []
    with httpx.stream("POST", f"{stack.base_url}/chat/completions", json=body, timeout=120) as r:
        assert r.status_code == 200, r.read()
        for line in r.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            chunks.append(chunk)
            if any(c["delta"].get("content") for c in chunk.get("choices", [])):
                times.append(time.perf_counter_ns())
    return times, chunks


pytestmark = [pytest.mark.dynamo, pytest.mark.slow]


def test_streamed_completion_has_usage_and_sane_timing(stack):
    start = time.perf_counter_ns()
    times, chunks = stream(
        stack,
        messages=[{"role": "user", "content": "Tell me a long story about a dragon."}],
        max_tokens=24,
        seed=7,
    )
    usage = chunks[-1]["usage"]
    finish = [c["finish_reason"] for ch in chunks for c in ch["choices"] if c["finish_reason"]]
    assert usage["prompt_tokens"] > 5
    assert 0 < usage["completion_tokens"] <= 24
    assert finish == ["length"] if usage["completion_tokens"] == 24 else finish == ["stop"]
    assert len(times) >= 3
    ttft_ms = (times[0] - start) / 1e6
    itl_ms = [(b - a) / 1e6 for a, b in zip(times, times[1:], strict=False)]
    assert ttft_ms < 10_000
    assert statistics.median(itl_ms) < 1_000


def test_max_tokens_is_honoured(stack):
    out = chat(
        stack,
        messages=[{"role": "user", "content": "Write a long poem."}],
        max_tokens=5,
        min_tokens=5,
    )
    assert out["usage"]["completion_tokens"] == 5
    assert out["choices"][0]["finish_reason"] == "length"


def test_stop_sequence_ends_the_reply(stack):
    body = dict(
        messages=[{"role": "user", "content": "Count from 1 to 20, separated by commas."}],
        max_tokens=80,
        temperature=0,
    )
    free = chat(stack, **body)["choices"][0]["message"]["content"]
    assert "7" in free, "the unconstrained reply must contain the stop string for this test"
    stopped = chat(stack, stop=["7"], **body)["choices"][0]
    assert stopped["finish_reason"] == "stop"
    assert "7" not in stopped["message"]["content"]
    assert free.startswith(stopped["message"]["content"])


def test_same_seed_same_reply(stack):
    body = dict(
        messages=[{"role": "user", "content": "Name a colour."}],
        max_tokens=12,
        temperature=1.0,
        seed=1234,
    )
    first = chat(stack, **body)["choices"][0]["message"]["content"]
    assert chat(stack, **body)["choices"][0]["message"]["content"] == first


def test_named_tool_choice_returns_a_valid_call(stack):
    # parallel_tool_calls false: exactly one call (without it the grammar allows several, and
    # this model tends to keep adding them until max_tokens).
    out = chat(
        stack,
        messages=ASK_BALANCE,
        tools=list(TOOLS.values()),
        tool_choice={"type": "function", "function": {"name": "get_account_balance"}},
        parallel_tool_calls=False,
        max_tokens=120,
        seed=3,
    )
    choice = out["choices"][0]
    calls = choice["message"]["tool_calls"]
    assert choice["finish_reason"] == "tool_calls"
    assert [c["function"]["name"] for c in calls] == ["get_account_balance"]
    args = json.loads(calls[0]["function"]["arguments"])
    assert_matches_schema(args, BALANCE_TOOL["function"]["parameters"])


def test_required_tool_choice_returns_valid_calls(stack):
    out = chat(
        stack,
        messages=ASK_BALANCE,
        tools=list(TOOLS.values()),
        tool_choice="required",
        max_tokens=160,
        seed=5,
    )
    calls = out["choices"][0]["message"]["tool_calls"]
    assert calls
    for call in calls:
        tool = TOOLS[call["function"]["name"]]
        assert_matches_schema(
            json.loads(call["function"]["arguments"]), tool["function"]["parameters"]
        )


def test_response_format_json_schema_is_enforced(stack):
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "zip": {"type": "integer"}},
        "required": ["city", "zip"],
    }
    out = chat(
        stack,
        messages=[{"role": "user", "content": "Give me a city and its zip code as JSON."}],
        response_format={"type": "json_schema", "json_schema": {"name": "addr", "schema": schema}},
        max_tokens=60,
        seed=11,
    )
    assert_matches_schema(json.loads(out["choices"][0]["message"]["content"]), schema)


def test_client_disconnect_frees_the_worker(stack):
    """Every slot is taken by a long reply whose client hangs up: cancelled requests must free
    their slots, or the next request waits behind 3000-token replies (minutes)."""
    body = {
        "model": stack.model,
        "stream": True,
        "max_tokens": 3000,
        "min_tokens": 3000,
        "messages": [{"role": "user", "content": "Write a very long story."}],
    }

    def hang_up() -> None:
        url = f"{stack.base_url}/chat/completions"
        with httpx.stream("POST", url, json=body, timeout=120) as r:
            for n, _ in enumerate(r.iter_lines()):
                if n > 10:
                    break  # hang up mid-stream

    clients = [threading.Thread(target=hang_up) for _ in range(SLOTS)]
    for t in clients:
        t.start()
    for t in clients:
        t.join()
    start = time.monotonic()
    chat(stack, messages=[{"role": "user", "content": "Hi"}], max_tokens=4)
    assert time.monotonic() - start < 20


def test_concurrent_requests_are_decoded_together(stack):
    """Four streams started together all get their first token before any of them ends: they
    share the batch instead of queueing behind each other (a FIFO would serve them in turn)."""
    results: dict[int, tuple[list[int], list[dict]]] = {}

    def one(i: int) -> None:
        results[i] = stream(
            stack,
            messages=[{"role": "user", "content": f"Story number {i} about a bank, please."}],
            max_tokens=48, min_tokens=48, seed=i,
        )

    threads = [threading.Thread(target=one, args=(i,)) for i in range(SLOTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    firsts = [results[i][0][0] for i in range(SLOTS)]
    lasts = [results[i][0][-1] for i in range(SLOTS)]
    assert max(firsts) < min(lasts), "a request started only after another had finished"
    for _, chunks in results.values():
        assert chunks[-1]["usage"]["completion_tokens"] == 48


def test_the_worker_logs_llamacpps_own_timings_per_request(stack):
    """One line per request, agreeing with the usage the client got: prompt and cached tokens,
    the decoded ones, whether a grammar applied; with prefill and decode times to rate."""
    from bankbench.serve.engine_speed import stack_timings, summarise

    before = len(stack_timings(stack.state_dir))
    guided = chat(stack, messages=ASK_BALANCE, tools=list(TOOLS.values()),
                  tool_choice="required", parallel_tool_calls=False, max_tokens=120, seed=5)
    free = chat(stack, messages=ASK_BALANCE, max_tokens=24, min_tokens=24, seed=5)
    rows = stack_timings(stack.state_dir)[before:]
    assert [r.guided for r in rows] == [True, False]
    for row, out in zip(rows, (guided, free), strict=True):
        usage = out["usage"]
        assert row.prompt_tokens == usage["prompt_tokens"]
        assert row.cached_tokens == usage["prompt_tokens_details"]["cached_tokens"]
        assert row.prefill_tokens == row.prompt_tokens - row.cached_tokens
        assert row.decode_tokens == usage["completion_tokens"]
        assert row.prefill_ms > 0 and row.decode_ms > 0 and row.in_flight_max == 1
        assert row.prefill_ms <= row.first_token_ms <= row.worker_ms
    # decode is timed from the first token to the last: 23 steps for 24 tokens
    assert rows[1].decode_steps == 23 and rows[1].decode_rate > 0
    assert summarise(rows).decode_alone is not None


def test_the_prebuilt_engine_is_recorded(stack):
    assert stack.versions.get("xllamacpp") == llamacpp.XLLAMACPP_VERSION


def test_alternating_conversations_resume_their_saved_prompts(stack):
    """Agent/evaluator-style alternation: the long prompt comes back from a saved KV state.
    "Long" is ~220 tokens against the judge's ~20: the reuse does not depend on the size (with
    ~1.1k tokens this test took ~41 s on two busy cores, ~9 s now)."""
    policy = " ".join(f"Rule {i}: verify the customer before account {i}." for i in range(16))
    agent = [{"role": "system", "content": policy}, {"role": "user", "content": "Balance?"}]
    judge = [
        {"role": "system", "content": "You judge answers."},
        {"role": "user", "content": "OK?"},
    ]
    first = chat(stack, messages=agent, max_tokens=2)["usage"]
    assert first["prompt_tokens"] > 150
    chat(stack, messages=judge, max_tokens=2)
    again = chat(stack, messages=agent, max_tokens=2)["usage"]
    assert again["prompt_tokens_details"]["cached_tokens"] == first["prompt_tokens"] - 1


def test_prompt_longer_than_the_context_is_a_client_error(stack):
    body = {
        "model": stack.model,
        "max_tokens": 4,
        "messages": [{"role": "user", "content": "bank " * 9000}],
    }
    r = httpx.post(f"{stack.base_url}/chat/completions", json=body, timeout=120)
    assert 400 <= r.status_code < 500, r.text
    assert chat(stack, messages=ASK_BALANCE, max_tokens=3)["choices"]  # worker still serves


def test_a_missing_wheel_fails_with_pips_words_and_never_compiles(tmp_path, monkeypatch):
    """No wheel for the pinned version: a ServeError naming it, with pip's output, and no
    source build attempted (pip is told --only-binary)."""
    from bankbench.serve.dynamo_venv import ensure_dynamo_venv

    python = ensure_dynamo_venv()
    monkeypatch.setenv("BANKBENCH_CACHE", str(tmp_path))
    monkeypatch.setattr(llamacpp, "PACKAGE", "xllamacpp==0.0.0.dev0")
    fake_venv_python = tmp_path / "venv" / "bin" / "python"
    fake_venv_python.parent.mkdir(parents=True)
    fake_venv_python.symlink_to(python)
    with pytest.raises(ServeError) as err:
        llamacpp.ensure_xllamacpp(fake_venv_python)
    assert err.value.component == llamacpp.COMPONENT
    assert "downloading xllamacpp==0.0.0.dev0" in err.value.cause
    assert "0.0.0.dev0" in err.value.log_tail
    log = (llamacpp.wheel_dir() / "download.log").read_text()
    assert "--only-binary=:all:" in log
    assert not list(llamacpp.wheel_dir().glob("*.whl"))


def test_a_cached_wheel_is_not_downloaded_again(tmp_path, monkeypatch):
    monkeypatch.setenv("BANKBENCH_CACHE", str(tmp_path))
    llamacpp.wheel_dir().mkdir(parents=True)
    wheel = llamacpp.wheel_dir() / "xllamacpp-1-cp310-abi3-manylinux2014_x86_64.whl"
    wheel.write_bytes(b"")

    def no_pip(*args, **kwargs):
        raise AssertionError(f"pip was run: {args}")

    monkeypatch.setattr(subprocess, "run", no_pip)
    assert llamacpp.fetch_wheel(tmp_path / "python") == wheel


# The grammar translation, checked inside the Dynamo venv (the worker imports `dynamo`).
GRAMMAR_PROBE = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import llamacpp_grammar as w
from dynamo.llm.exceptions import InvalidArgument

schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
tag = {"type": "tag", "begin": "<a>", "content": {"type": "json_schema", "json_schema": schema},
       "end": "</a>"}
out = {}
for name, fmt in {
    "required": {"type": "triggered_tags", "triggers": ["<a>"], "tags": [tag],
                 "at_least_one": True, "stop_after_first": False},
    "first_only": {"type": "triggered_tags", "triggers": ["<a>"], "tags": [tag],
                   "at_least_one": True, "stop_after_first": True},
    "separated": {"type": "tags_with_separator", "tags": [tag], "separator": ",",
                  "at_least_one": True},
    "sequence": {"type": "sequence", "elements": [{"type": "const_string", "value": "x"},
                 {"type": "or", "elements": [tag, {"type": "const_string", "value": "y"}]}]},
    "auto": {"type": "triggered_tags", "triggers": ["<a>"], "tags": [tag],
             "at_least_one": False},
}.items():
    out[name] = w.structural_grammar({"type": "structural_tag", "format": fmt})
for bad in ({"structural_tag": {"type": "structural_tag", "format": {"type": "qwen_xml"}}},
            {"regex": "[0-9]+"}, {"json": "{not json"}, {"json": {"type": 5}}, {"json": [1]}):
    try:
        w.guided_grammar(bad)
        out[json.dumps(bad)] = "accepted"
    except InvalidArgument as exc:
        out[json.dumps(bad)] = "refused: " + str(exc)
# The frontend's JSON guide for a forced call: one anyOf branch per tool.
guide = {"type": "array", "minItems": 1, "maxItems": 1, "items": {"type": "object", "anyOf": [
    {"properties": {"name": {"enum": ["t"]}, "parameters": schema},
     "required": ["name", "parameters"]}]}}
out["guide"] = w.checked_schema(guide)
print(json.dumps(out))
"""


def test_structural_tags_become_grammars(stack, tmp_path):
    # `stack` only guarantees the Dynamo venv with xllamacpp (or skips).
    from bankbench.paths import dynamo_assets
    from bankbench.serve.dynamo_venv import ensure_dynamo_venv

    probe = tmp_path / "probe.py"
    probe.write_text(GRAMMAR_PROBE)
    workers = dynamo_assets() / "workers"
    proc = subprocess.run(
        [str(ensure_dynamo_venv()), str(probe), str(workers)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["auto"] is None  # "auto" only permits tool calls: unconstrained
    for name in ("required", "first_only", "separated", "sequence"):
        assert out[name].startswith("%llguidance {}\nstart: r"), out[name]
    # one or more tags, newline-separated; just one; comma-separated
    assert re.search(r'^(r\d+): (r\d+) \("\\n" \2\)\*$', out["required"], re.M)
    assert ")*" not in out["first_only"]
    assert re.search(r'^r\d+: "<a>" r\d+ "</a>"$', out["first_only"], re.M)
    assert re.search(r'^(r\d+): (r\d+) \("," \2\)\*$', out["separated"], re.M)
    assert re.search(r"^r\d+: r\d+ \| r\d+$", out["sequence"], re.M)
    # the tool's schema is embedded closed (no invented keys) and compact
    embedded = re.search(r"^r\d+: %json (.*)$", out["first_only"], re.M).group(1)
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    assert json.loads(embedded) == {
        **schema, "additionalProperties": False, "x-guidance": {"whitespace_flexible": False}
    }
    # a forced call's JSON guide: the branches are closed, not the object that holds them
    # (closing it would forbid every key, and the grammar would match no call at all)
    item = out["guide"]["items"]
    assert "additionalProperties" not in item
    branch = item["anyOf"][0]
    assert branch["additionalProperties"] is False
    assert branch["properties"]["parameters"]["additionalProperties"] is False
    refused = [v for k, v in out.items() if k.startswith("{")]
    assert all(v.startswith("refused: ") for v in refused), refused
    assert any("qwen_xml" in v for v in refused) and any("regex" in v for v in refused)
