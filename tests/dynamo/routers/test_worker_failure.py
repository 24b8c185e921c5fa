"""Workers killed mid-run: their in-flight streams continue on the surviving worker and later
requests go there; no request is lost (real frontend + mocker workers). Two of three workers
die so that, wherever the router put the six streams, some were cut (1 in 729 runs put all six
on the survivor; the test then says it proved nothing rather than pass)."""

import json
import signal
import threading

import httpx
import pytest

from bankbench import procs
from bankbench.serve import api
from tests.dynamo.routers.helpers import chat, component_of, wait_for_decisions, worker_ports

pytestmark = pytest.mark.dynamo

MAX_TOKENS = 200  # ~1.2 s per stream at the mocker's default speed: long enough to cut


@pytest.fixture(scope="module")
def stack(tmp_path_factory, dynamo_python):
    tmp = tmp_path_factory.mktemp("thompson-fail")
    state = api.up("cpu-mocker", router="thompson", workers=3, state_dir=tmp / "state",
                   options={"speedup_ratio": 1, "router_seed": 3})
    yield state
    api.down(state)


def _stream(state, rid, session, started: threading.Event, out: dict) -> None:
    """A streamed completion; `started` is set once its first token arrived."""
    body = {"model": state.model, "max_tokens": MAX_TOKENS, "stream": True,
            "stream_options": {"include_usage": True},
            "messages": [{"role": "user", "content": f"a long answer please {rid}"}]}
    usage, status = None, None
    try:
        with httpx.stream("POST", f"{state.base_url}/chat/completions", json=body, timeout=60,
                          headers={"x-request-id": rid, "x-dynamo-session-id": session}) as r:
            status = r.status_code
            for line in r.iter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                chunk = json.loads(line[6:])
                if chunk.get("choices"):
                    started.set()
                usage = chunk.get("usage") or usage
    finally:
        started.set()
        out[rid] = (status, usage)


def test_killing_a_worker_mid_run_loses_no_request(stack):
    ports = worker_ports(stack)
    victims = [c for c in stack.components if c.name in ("worker-0", "worker-1")]
    results: dict[str, tuple] = {}
    started = [threading.Event() for _ in range(6)]
    threads = [threading.Thread(target=_stream, args=(stack, f"inflight-{i}", f"s-{i}",
                                                      started[i], results))
               for i in range(6)]
    for t in threads:
        t.start()
    for ev in started:  # kill only once every stream is under way (not after a fixed sleep)
        assert ev.wait(60)
    assert not results, "a stream ended before the kill; make MAX_TOKENS larger"
    # SIGKILL: a crash. (SIGTERM would not do: the mocker drains its streams before leaving.)
    for victim in victims:
        procs.stop_group(victim.pid, ((signal.SIGKILL, 5.0),), started=victim.start_time)
    for t in threads:
        t.join(timeout=60)
    assert len(results) == 6
    for rid, (status, usage) in results.items():
        assert status == 200, rid
        assert usage and usage["completion_tokens"] == MAX_TOKENS, (rid, usage)

    after = [chat(stack, f"after-{i}", f"t-{i}", f"next question {i}") for i in range(12)]
    assert all(r.status_code == 200 for r in after)

    rows = {r["request_id"]: r for r in wait_for_decisions(stack, 19)}
    everything = list(rows.values())
    cut = [r for r in everything if any(a["tokens_before"] > 0 for a in r["attempts"])]
    assert cut, "no stream was running on the killed worker; the test proved nothing"
    assert all(r["outcome"] == "ok after retry" for r in cut)
    assert all(r["output_tokens"] == MAX_TOKENS for r in cut)
    late = everything[-12:]
    assert all(component_of(r["worker_address"], ports) == "worker-2" for r in late)
