"""The engine speed a cpu-tiny stack states when it stops (bankbench/serve/engine_speed.py),
on timings lines with known answers."""

from __future__ import annotations

import json

from bankbench.serve.engine_speed import (
    SPEED_FILE,
    TIMINGS_FILE,
    EngineTiming,
    summarise,
    summarise_stack,
)


def timing(i: int, *, new: int, prefill_ms: float, steps: int, decode_ms: float,
           in_flight: int = 1, context: int = 5000) -> dict:
    return {"request_id": f"r{i}", "end_unix_s": 1.0 + i, "prompt_tokens": context,
            "cached_tokens": context - new, "prefill_tokens": new, "prefill_ms": prefill_ms,
            "decode_tokens": steps + 1, "decode_steps": steps, "decode_ms": decode_ms,
            "first_token_ms": prefill_ms + 5, "worker_ms": prefill_ms + decode_ms + 10,
            "guided": False, "in_flight_max": in_flight, "finish": "stop"}


def rows(*lines: dict) -> list[EngineTiming]:
    return [EngineTiming.model_validate(line) for line in lines]


def test_alone_and_shared_requests_are_summarised_apart():
    speed = summarise(rows(
        timing(0, new=200, prefill_ms=1000, steps=40, decode_ms=1000),   # 200 tok/s, 40 tok/s
        timing(1, new=600, prefill_ms=2000, steps=20, decode_ms=1000),   # 300 tok/s, 20 tok/s
        timing(2, new=100, prefill_ms=1000, steps=60, decode_ms=1000),   # 100 tok/s, 60 tok/s
        timing(3, new=300, prefill_ms=3000, steps=10, decode_ms=1000, in_flight=3),
    ))
    assert speed.requests == 4
    # prefill pooled over the requests alone: 900 tokens in 4 s; decode the median request
    assert speed.prefill_alone.tokens_per_s == 900 / 4 and speed.prefill_alone.requests == 3
    assert speed.decode_alone.tokens_per_s == 40 and speed.decode_alone.context_tokens == 5000
    assert speed.prefill_shared.tokens_per_s == 100 and speed.decode_shared.tokens_per_s == 10


def test_requests_that_read_or_decoded_too_little_are_left_out_not_counted_as_slow():
    speed = summarise(rows(
        timing(0, new=1, prefill_ms=30, steps=2, decode_ms=100),  # a full cache hit, 2 tokens
        timing(1, new=200, prefill_ms=1000, steps=40, decode_ms=1000),
    ))
    assert speed.prefill_alone.requests == 1 and speed.prefill_alone.tokens_per_s == 200
    assert speed.decode_alone.requests == 1 and speed.decode_alone.tokens_per_s == 40


def test_a_stopped_stack_states_its_speed_and_keeps_it(tmp_path):
    lines = [timing(0, new=200, prefill_ms=1000, steps=40, decode_ms=1000),
             timing(1, new=200, prefill_ms=1000, steps=40, decode_ms=2000, in_flight=2)]
    (tmp_path / TIMINGS_FILE.format(index=0)).write_text(
        json.dumps(lines[0]) + "\n" + '{"torn": ' + "\n")
    (tmp_path / TIMINGS_FILE.format(index=1)).write_text(json.dumps(lines[1]) + "\n")
    line = summarise_stack(tmp_path)
    assert line is not None
    assert "2 requests" in line and "alone: prefill 200 new tokens/s" in line
    assert "decode 40 tokens/s per request" in line and "sharing the engine" in line
    kept = json.loads((tmp_path / SPEED_FILE).read_text())
    assert kept["decode_shared"]["tokens_per_s"] == 20


def test_no_timings_no_line(tmp_path):
    assert summarise_stack(tmp_path) is None
    assert not (tmp_path / SPEED_FILE).exists()


def test_the_cpu_tiny_profile_states_the_speed_when_it_stops(tmp_path, capsys):
    from bankbench.serve.cpu_tiny import PROFILE
    from bankbench.serve.state import ServerState

    line = timing(0, new=200, prefill_ms=1000, steps=40, decode_ms=1000)
    (tmp_path / TIMINGS_FILE.format(index=0)).write_text(json.dumps(line) + "\n")
    state = ServerState(profile="cpu-tiny", base_url="http://127.0.0.1:1/v1", model="m",
                        state_dir=tmp_path)
    PROFILE.stop(state)  # no processes recorded: only the summary
    err = capsys.readouterr().err
    assert err.startswith("bankbench: engine speed over 1 requests") and "decode 40" in err
