"""What each request cost the engine, in llama.cpp's own timings: one JSON line per request.

llama.cpp sends `timings` with every event of a /completion stream (the worker asks for them
per token), so a phase's last event seen has them, even when the worker ends the stream itself
at a stop id: `prompt_n` tokens evaluated in `prompt_ms` (which also samples the first token),
`cache_n` reused from the slot, and `predicted_n` tokens generated, the last
`predicted_n − 1` of them in `predicted_ms` (measured from the first token to the last;
llama.cpp's own `predicted_per_second` divides `predicted_n` by it, a little high, so it is not
used). The worker adds what llama.cpp cannot see: its own
wall time from sending the request to the first token and to the end (the gap to `prompt_ms`
is queueing, grammar set-up and the loopback hop), whether a grammar constrained the reply,
and how many requests the engine had in flight at most while this one ran (itself included:
1 means it ran alone).

The line, read by bankbench/serve/engine_speed.py (`EngineTiming`):
  request_id, end_unix_s, prompt_tokens, cached_tokens, prefill_tokens, prefill_ms,
  decode_tokens, decode_steps, decode_ms, first_token_ms, worker_ms, guided, in_flight_max,
  finish
A request run in two phases (`min_tokens`) sums both. A request that ended before llama.cpp
sent any event (cancelled while queued or reading its prompt) has null engine figures.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any

logger = logging.getLogger("llamacpp_worker.timings")


@dataclass(eq=False)
class RequestTiming:
    request_id: str
    prompt_tokens: int
    guided: bool
    started: float = field(default_factory=time.perf_counter)
    cached_tokens: int | None = None
    prefill_tokens: int = 0
    prefill_ms: float = 0.0
    decode_tokens: int = 0
    decode_steps: int = 0
    decode_ms: float = 0.0
    first_token_s: float | None = None
    in_flight_max: int = 1
    timed: bool = False  # some phase reported llama.cpp's timings

    def token_seen(self) -> None:
        if self.first_token_s is None:
            self.first_token_s = time.perf_counter()

    def phase_ended(self, timings: dict[str, Any]) -> None:
        """Add one /completion phase's last `timings` (the first phase's cache_n is the
        request's)."""
        self.timed = True
        if self.cached_tokens is None:
            self.cached_tokens = int(timings.get("cache_n", 0))
        self.prefill_tokens += int(timings.get("prompt_n", 0))
        self.prefill_ms += float(timings.get("prompt_ms", 0.0))
        predicted = int(timings.get("predicted_n", 0))
        self.decode_tokens += predicted
        self.decode_steps += max(predicted - 1, 0)
        self.decode_ms += float(timings.get("predicted_ms", 0.0))

    def line(self, finish: str) -> dict[str, Any]:
        now = time.perf_counter()
        engine = {
            "cached_tokens": self.cached_tokens,
            "prefill_tokens": self.prefill_tokens,
            "prefill_ms": round(self.prefill_ms, 3),
            "decode_tokens": self.decode_tokens,
            "decode_steps": self.decode_steps,
            "decode_ms": round(self.decode_ms, 3),
        }
        if not self.timed:  # no phase reported llama.cpp's timings: unknown, not zero
            engine = dict.fromkeys(engine)
        first = self.first_token_s
        return {
            "request_id": self.request_id,
            "end_unix_s": round(time.time(), 3),
            "prompt_tokens": self.prompt_tokens,
            **engine,
            "first_token_ms": None if first is None else round((first - self.started) * 1e3, 3),
            "worker_ms": round((now - self.started) * 1e3, 3),
            "guided": self.guided,
            "in_flight_max": self.in_flight_max,
            "finish": finish,
        }


class TimingsLog:
    """The requests in flight, and the file their lines go to when they end (None: no file)."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.active: set[RequestTiming] = set()

    def begin(self, request_id: str, prompt_tokens: int, guided: bool) -> RequestTiming:
        timing = RequestTiming(request_id, prompt_tokens, guided)
        self.active.add(timing)
        for other in self.active:
            other.in_flight_max = max(other.in_flight_max, len(self.active))
        return timing

    def end(self, timing: RequestTiming, finish: str) -> None:
        self.active.discard(timing)
        if self.path is None:
            return
        try:
            # One short append per request: whole lines even with several workers on one file.
            with open(self.path, "a", encoding="utf-8") as out:
                out.write(json.dumps(timing.line(finish)) + "\n")
        except OSError as exc:
            logger.warning("engine timings not written to %s: %s", self.path, exc)
