"""The real cpu-mocker stack (Dynamo frontend + 2 mocker workers) through the Python API."""

import json
import time

import httpx
import pytest

from bankbench.procs import group_alive
from bankbench.serve import api
from bankbench.serve.dynamo_venv import DYNAMO_VERSION
from bankbench.serve.errors import ServeError
from bankbench.serve.metrics import metric_sum, parse_samples, scrape
from bankbench.serve.replay import replay_annotation, tool_call_text, write_trace

pytestmark = pytest.mark.dynamo

BALANCE_TOOL = {
    "type": "function",
    "function": {
        "name": "get_account_balance",
        "description": "Balance of one account.",
        "parameters": {
            "type": "object",
            "properties": {
                "account_number": {"type": "string"},
                "account_type": {"type": "string", "enum": ["checking", "savings"]},
            },
            "required": ["account_number"],
        },
    },
}
BALANCE_ARGS = {"account_number": "12345678", "account_type": "savings"}


@pytest.fixture(scope="module")
def stack(tmp_path_factory, dynamo_python):
    tmp = tmp_path_factory.mktemp("mocker")
    trace = write_trace(
        tmp / "trace.jsonl",
        {
            "s1": [tool_call_text("get_account_balance", BALANCE_ARGS), "Your balance is 42."],
            "s2": ["Hello from session two."],
        },
    )
    state = api.up(
        "cpu-mocker",
        workers=2,
        options={"replay_trace": str(trace), "speedup_ratio": 5},
        state_dir=tmp / "state",
    )
    yield state
    api.down(state)


def streamed_text(chunks: list[dict]) -> str:
    """The content deltas of a streamed chat completion, joined."""
    return "".join((c["choices"][0]["delta"].get("content") or "")
                   for c in chunks if c.get("choices"))


def stream_chat(state, body):
    """POST a streamed chat completion; return (parsed chunks, first-content latency ns)."""
    body = {"model": state.model, "stream": True,
            "stream_options": {"include_usage": True}, **body}
    chunks, first_ns = [], None
    start = time.perf_counter_ns()
    with httpx.stream("POST", f"{state.base_url}/chat/completions", json=body, timeout=30) as r:
        assert r.status_code == 200, r.read()
        for line in r.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[len("data: "):])
            delta = (chunk.get("choices") or [{}])[0].get("delta", {})
            if first_ns is None and (delta.get("content") or delta.get("tool_calls")):
                first_ns = time.perf_counter_ns() - start
            chunks.append(chunk)
    return chunks, first_ns


def test_state_is_recorded_and_both_workers_registered(stack):
    again = api.load_state(stack.state_dir)
    assert again.base_url == stack.base_url and again.model == stack.model
    assert [c.name for c in again.components] == ["frontend", "mocker"]
    # Read from the venv the stack runs in; sweep.json's provenance takes it from here.
    assert again.versions == {"ai-dynamo": DYNAMO_VERSION}
    report = api.status(stack)
    assert report.ok and report.models == [stack.model]
    assert report.workers_registered == 2


def test_streamed_chat_reports_usage(stack):
    chunks, first_ns = stream_chat(stack, {
        "messages": [{"role": "user", "content": "Say hello."}],
        "max_tokens": 50,
        "nvext": replay_annotation("s2", 0),
    })
    text = streamed_text(chunks)
    assert text == "Hello from session two."
    assert first_ns is not None and first_ns > 0
    usage = chunks[-1]["usage"]
    assert usage["completion_tokens"] == len(text.split()) + 1  # 6 tokens with the '.'
    assert usage["prompt_tokens"] > 0


def test_tool_call_is_parsed_by_the_frontend(stack):
    chunks, _ = stream_chat(stack, {
        "messages": [{"role": "user", "content": "What is my savings balance?"}],
        "tools": [BALANCE_TOOL],
        "max_tokens": 200,
        "nvext": replay_annotation("s1", 0),
    })
    calls = [tc for c in chunks if c.get("choices")
             for tc in (c["choices"][0]["delta"].get("tool_calls") or [])]
    assert calls, f"no tool_calls delta in {chunks}"
    name = "".join(tc["function"].get("name") or "" for tc in calls)
    args = "".join(tc["function"].get("arguments") or "" for tc in calls)
    assert name == "get_account_balance"
    assert json.loads(args) == BALANCE_ARGS
    content = streamed_text(chunks)
    assert "<tool_call>" not in content


def test_second_turn_of_a_session_is_turn_one(stack):
    chunks, _ = stream_chat(stack, {
        "messages": [{"role": "user", "content": "And now?"}],
        "max_tokens": 50,
        "nvext": replay_annotation("s1", 1),
    })
    text = streamed_text(chunks)
    assert text == "Your balance is 42."


def test_metrics_expose_frontend_latency(stack, tmp_path):
    out = scrape(stack.base_url, tmp_path / "m.prom")
    samples = parse_samples(out.read_text())
    for name in ("dynamo_frontend_time_to_first_token_seconds_count",
                 "dynamo_frontend_inter_token_latency_seconds_count",
                 "dynamo_frontend_requests_total"):
        assert metric_sum(samples, name) >= 1, name


def test_a_second_stack_in_the_same_state_dir_is_refused(stack):
    with pytest.raises(ServeError, match="already running"):
        api.up("cpu-mocker", state_dir=stack.state_dir)


def test_down_leaves_nothing_running(tmp_path, dynamo_python):
    state = api.up("cpu-mocker", options={"speedup_ratio": 1000}, state_dir=tmp_path / "s")
    pids = [c.pid for c in state.components]
    assert all(group_alive(p) for p in pids)
    api.down(state)
    assert not any(group_alive(p) for p in pids)
    assert not (tmp_path / "s" / "state.json").exists()
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"{state.base_url}/models", timeout=2)


def test_busy_port_is_refused_before_anything_starts(tmp_path):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(ServeError, match=f"port {port} is busy"):
            api.up("cpu-mocker", port=port, state_dir=tmp_path / "s")
    assert not (tmp_path / "s" / "state.json").exists()


def test_a_picked_port_taken_before_the_frontend_binds_it_is_picked_again(
        tmp_path, dynamo_python, monkeypatch):
    """The port the stack picks is free when picked; another program may take it before the
    frontend binds it. The frontend then exits ("already in use"): the start picks again."""
    import socket

    from bankbench import procs

    with socket.socket() as taker:
        taker.bind(("127.0.0.1", 0))
        taker.listen()
        taken = taker.getsockname()[1]
        picks = iter([taken])
        real = procs.free_port
        monkeypatch.setattr(procs, "free_port", lambda *a: next(picks, None) or real(*a))
        state = api.up("cpu-mocker", options={"speedup_ratio": 1000}, state_dir=tmp_path / "s")
        try:
            assert f":{taken}/" not in state.base_url
            assert httpx.get(f"{state.base_url}/models", timeout=5).status_code == 200
            pids = [c.pid for c in state.components]
        finally:
            api.down(state)
    assert not any(group_alive(p) for p in pids)


def test_a_port_the_user_named_taken_at_bind_is_not_swapped(tmp_path, dynamo_python,
                                                            monkeypatch):
    """A named port passes the busy check and is taken before the bind: the error stands."""
    import socket

    from bankbench import procs

    with socket.socket() as taker:
        taker.bind(("127.0.0.1", 0))
        taker.listen()
        port = taker.getsockname()[1]
        monkeypatch.setattr(procs, "port_is_free", lambda *a: True)
        with pytest.raises(ServeError, match="already in use"):
            api.up("cpu-mocker", port=port, options={"speedup_ratio": 1000},
                   state_dir=tmp_path / "s")


def test_component_dying_during_start_is_reported_and_cleaned_up(tmp_path, dynamo_python):
    with pytest.raises(ServeError) as err:
        api.up("cpu-mocker", options={"mocker_args": "--no-such-flag"},
               state_dir=tmp_path / "s")
    assert err.value.component == "mocker"
    assert "mocker exited during start" in err.value.cause
    assert "\n" not in err.value.cause
    assert "no-such-flag" in err.value.log_tail
    state = json.loads((tmp_path / "s" / "state.json").read_text())
    assert not any(group_alive(c["pid"]) for c in state["components"])


def test_chat_template_renders_tool_history(stack):
    """The frontend renders assistant tool_calls and tool results (not dropped, not an error)."""
    def prompt_tokens(messages):
        body = {"model": stack.model, "messages": messages, "tools": [BALANCE_TOOL],
                "max_tokens": 1}
        resp = httpx.post(f"{stack.base_url}/chat/completions", json=body, timeout=30)
        assert resp.status_code == 200, resp.text
        return resp.json()["usage"]["prompt_tokens"]

    user = [{"role": "user", "content": "What is my savings balance?"}]
    result = "balance: 1234.56 EUR, available: 1200.00 EUR, as of 2026-11-22"
    history = user + [
        {"role": "assistant", "content": None, "tool_calls": [{
            "id": "call-1", "type": "function",
            "function": {"name": "get_account_balance", "arguments": json.dumps(BALANCE_ARGS)},
        }]},
        {"role": "tool", "tool_call_id": "call-1", "content": result},
    ]
    grown = prompt_tokens(history) - prompt_tokens(user)
    # the call (name + arguments) and the result both reach the prompt
    assert grown > len(result.split()) + len(json.dumps(BALANCE_ARGS).split())


def test_write_trace_round_trips_through_the_tokenizer(tmp_path, dynamo_python):
    from tokenizers import Tokenizer

    from bankbench.serve.replay import ReplayLine
    from bankbench.serve.smollm2 import model_dir

    texts = {"a": ["Plain text, 42 €.", tool_call_text("x", {"k": [1, 2]})], "b": ["ok"]}
    path = write_trace(tmp_path / "t.jsonl", texts)
    lines = [ReplayLine.model_validate_json(x) for x in path.read_text().splitlines()]
    assert [ln.session_id for ln in lines] == ["a", "a", "b"]
    tok = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
    decoded = [tok.decode(ln.output_token_ids) for ln in lines]
    assert decoded == [*texts["a"], *texts["b"]]
    assert all(ln.output_length == len(ln.output_token_ids) for ln in lines)
    with pytest.raises(ValueError, match="must not contain ':'"):
        write_trace(tmp_path / "bad.jsonl", {"a:b": ["x"]})


def test_external_profile_records_an_existing_server(stack, tmp_path):
    state = api.up("external", options={"url": stack.base_url.removesuffix("/v1")},
                   state_dir=tmp_path / "ext")
    assert state.base_url == stack.base_url and state.model == stack.model
    assert state.components == [] and state.versions == {}  # nothing known, nothing guessed
    assert api.status(state).ok
    api.down(state)  # launches nothing, so stops nothing: the stack stays up
    assert api.status(stack).ok
    with pytest.raises(ServeError, match="not served"):
        api.up("external", model="other", options={"url": stack.base_url},
               state_dir=tmp_path / "ext")
