"""The llama.cpp worker's per-request timings lines (dynamo/workers/llamacpp_timings.py) as
bankbench reads them (bankbench/serve/engine_speed.py); the worker writing them for real is
checked end to end in tests/bankbench/serve/test_cpu_tiny.py."""

from __future__ import annotations

import json
import sys

from bankbench.paths import dynamo_assets
from bankbench.serve.engine_speed import EngineTiming, read_timings

sys.path.insert(0, str(dynamo_assets() / "workers"))
from llamacpp_timings import TimingsLog  # noqa: E402

PHASE = {"cache_n": 4800, "prompt_n": 200, "prompt_ms": 1000.0, "predicted_n": 41,
         "predicted_ms": 2000.0}


def test_a_line_sums_the_phases_and_reads_back(tmp_path):
    log = TimingsLog(str(tmp_path / "t.jsonl"))
    timing = log.begin("r1", 5000, guided=True)
    timing.token_seen()
    timing.phase_ended(PHASE)
    timing.phase_ended({"cache_n": 5041, "prompt_n": 1, "prompt_ms": 20.0, "predicted_n": 11,
                        "predicted_ms": 500.0})
    log.end(timing, "stop")
    [row] = read_timings([tmp_path / "t.jsonl"])
    # the first phase's cache hit is the request's; steps leave out each phase's first token
    assert (row.cached_tokens, row.prefill_tokens, row.decode_tokens, row.decode_steps) == (
        4800, 201, 52, 50)
    assert row.prefill_ms == 1020.0 and row.decode_ms == 2500.0
    assert row.decode_rate == 50 / 2.5 and row.prefill_rate == 201 / 1.02
    assert row.guided and row.finish == "stop" and row.in_flight_max == 1
    assert row.first_token_ms is not None and row.worker_ms >= row.first_token_ms


def test_in_flight_counts_every_request_that_overlapped(tmp_path):
    log = TimingsLog(str(tmp_path / "t.jsonl"))
    a = log.begin("a", 10, guided=False)
    b = log.begin("b", 10, guided=False)
    log.end(a, "stop")
    c = log.begin("c", 10, guided=False)  # overlaps b only
    log.end(b, "stop")
    log.end(c, "stop")
    d = log.begin("d", 10, guided=False)
    log.end(d, "stop")
    peaks = {r.request_id: r.in_flight_max for r in read_timings([tmp_path / "t.jsonl"])}
    assert peaks == {"a": 2, "b": 2, "c": 2, "d": 1}


def test_a_request_cut_short_has_no_engine_figures_not_zeros(tmp_path):
    log = TimingsLog(str(tmp_path / "t.jsonl"))
    log.end(log.begin("cut", 100, guided=False), "cancelled")
    raw = json.loads((tmp_path / "t.jsonl").read_text())
    assert raw["prefill_ms"] is None and raw["decode_steps"] is None
    [row] = read_timings([tmp_path / "t.jsonl"])
    assert row.prefill_rate is None and row.decode_rate is None and row.finish == "cancelled"


def test_an_unwritable_log_costs_the_line_not_the_request(tmp_path, caplog):
    log = TimingsLog(str(tmp_path / "missing" / "t.jsonl"))
    log.end(log.begin("r", 10, guided=False), "stop")
    assert "not written" in caplog.text and not log.active


def test_short_reads_and_decodes_give_no_rate():
    row = EngineTiming(request_id="r", end_unix_s=0, prompt_tokens=5000, prefill_tokens=3,
                       prefill_ms=40.0, decode_steps=2, decode_ms=30.0, worker_ms=100.0)
    assert row.prefill_rate is None and row.decode_rate is None
