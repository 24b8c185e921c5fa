"""The server's view: Dynamo's request trace on cpu-mocker (the real frontend writes one
request_end line per request, keyed by the client's x-request-id), and its per-level figures
from hand-made trace lines joined to hand-made call records."""

from __future__ import annotations

import json
import time
import uuid

import httpx
import numpy as np
import pytest

from analysis.request_trace import server_view, server_view_section
from analysis.synthetic import record, write_job, write_sweep_manifest, write_trial
from analysis.tables import load
from contracts.request_trace import REQUEST_TRACE_FILE
from contracts.sweep import level_dir


def _line(x_request_id: str | None, inputs: int, cached: int, wait: float, worker: int) -> str:
    request = {"request_id": uuid.uuid4().hex, "x_request_id": x_request_id,
               "input_tokens": inputs, "cached_tokens": cached, "output_tokens": 5,
               "prefill_wait_time_ms": wait, "ttft_ms": wait + 1.0,
               "worker": {"prefill_worker_id": worker, "decode_worker_id": worker}}
    return json.dumps({"timestamp": 0, "event": {
        "schema": "dynamo.request.trace.v1", "event_type": "request_end", "request": request}})


def test_per_level_cache_hits_queue_wait_and_worker_load(tmp_path):
    sweep = write_sweep_manifest(tmp_path / "s", [2])
    job = write_job(level_dir(sweep, 2), 2, n_total_trials=1)
    ids = ["r1", "r2", "r3", "r4"]
    write_trial(job, "banking-000__a", scenario_id="banking-000",
                records=[record(request_id=i, trial_name="banking-000__a") for i in ids],
                rewards={"tsq": 1.0}, agent_status={"status": "ok", "reason": None})
    lines = [_line("r1", 100, 0, 10.0, 1), _line("r2", 100, 50, 20.0, 1),
             _line("r3", 100, 50, 30.0, 1), _line("r4", 100, 100, 40.0, 2),
             _line(None, 1, 0, 999.0, 3),  # the frontend's own readiness probe: not joined
             "not json"]
    (job / REQUEST_TRACE_FILE).write_text("\n".join(lines) + "\n")
    view = server_view(load(sweep)).iloc[0]
    assert (view["traced"], view["joined"]) == (5, 4)
    assert view["cache_hit_share"] == pytest.approx(200 / 400)
    assert view["queue_wait_ms_p50"] == pytest.approx(np.percentile([10, 20, 30, 40], 50))
    assert view["workers"] == 2 and view["busiest_worker_share"] == pytest.approx(3 / 4)
    assert "Server's view" in server_view_section(load(sweep))[0]


@pytest.mark.dynamo
def test_cpu_mocker_writes_a_request_end_line_per_request(tmp_path):
    from bankbench.serve import api

    with api.running("cpu-mocker", workers=1, state_dir=tmp_path / "state",
                     options={"speedup_ratio": 100.0, "request_trace": True}) as state:
        rid = uuid.uuid4().hex
        reply = httpx.post(f"{state.base_url}/chat/completions", timeout=60,
                           # 1.6.1 records x_request_id only for requests with a session
                           # (agent context); the agent sends one per trial by default.
                           headers={"x-request-id": rid, "x-dynamo-session-id": "trial-1"},
                           json={"model": state.model, "max_tokens": 8, "stream": True,
                                 "messages": [{"role": "user", "content": "hi"}]})
        assert reply.status_code == 200
        trace = tmp_path / "state" / REQUEST_TRACE_FILE
        deadline = time.monotonic() + 20
        while rid not in (trace.read_text() if trace.is_file() else ""):
            assert time.monotonic() < deadline, "no trace line for the request"
            time.sleep(0.2)
    ends = [json.loads(x)["event"] for x in trace.read_text().splitlines() if rid in x]
    assert ends[0]["event_type"] == "request_end"
    assert ends[0]["request"]["x_request_id"] == rid
    assert ends[0]["request"]["input_tokens"] > 0
    assert ends[0]["agent_context"]["session_id"] == "trial-1"
