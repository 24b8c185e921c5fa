"""How fast the cpu-tiny engine ran, from the llama.cpp worker's own per-request timings.

Each worker of a cpu-tiny stack appends one line per request to
`<state_dir>/engine_timings-worker-<i>.jsonl` (dynamo/workers/llamacpp_timings.py writes it;
`EngineTiming` reads it). From those lines:

- prefill tokens/s: new prompt tokens (those not found in the slot's cache) over llama.cpp's
  `prompt_ms`, pooled over the requests that read at least `MIN_PREFILL` new tokens;
- decode tokens/s per request: `decode_steps / decode_ms` of one request (the tokens after its
  first, over the time from its first token to its last), the median over the requests that
  decoded at least `MIN_DECODE` steps.

Both are given for the requests that ran alone in the engine and apart for those that shared it
(a batched request decodes slower per request while the batch as a whole goes faster), with the
median context (prompt tokens) they ran at: decode and prefill both slow as the context grows.
When the stack stops, `summarise_stack` writes `engine_speed.json` beside the timings and
returns the line a run prints, so a run's wall time can be read against the speed the host
gave it.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ValidationError

TIMINGS_FILE = "engine_timings-worker-{index}.jsonl"
SPEED_FILE = "engine_speed.json"
MIN_PREFILL = 32  # fewer new tokens measure set-up more than reading
MIN_DECODE = 8  # fewer steps measure the first tokens' jitter


class EngineTiming(BaseModel):
    """One request as the worker's timings line gives it (null: llama.cpp reported none)."""

    request_id: str
    end_unix_s: float
    prompt_tokens: int
    cached_tokens: int | None = None
    prefill_tokens: int | None = None
    prefill_ms: float | None = None
    decode_tokens: int | None = None
    decode_steps: int | None = None
    decode_ms: float | None = None
    first_token_ms: float | None = None
    worker_ms: float
    guided: bool = False
    in_flight_max: int = 1
    finish: str = ""

    @property
    def prefill_rate(self) -> float | None:
        """New prompt tokens per second, where enough were read to mean reading speed."""
        if not self.prefill_tokens or self.prefill_tokens < MIN_PREFILL or not self.prefill_ms:
            return None
        return self.prefill_tokens / (self.prefill_ms / 1e3)

    @property
    def decode_rate(self) -> float | None:
        """Tokens per second after the first, where enough were decoded to mean decode speed."""
        if not self.decode_steps or self.decode_steps < MIN_DECODE or not self.decode_ms:
            return None
        return self.decode_steps / (self.decode_ms / 1e3)

    @property
    def decode_ms_per_token(self) -> float | None:
        rate = self.decode_rate
        return None if rate is None else 1e3 / rate


class Rate(BaseModel):
    """A speed over some requests: tokens/s, how many requests, at what context."""

    tokens_per_s: float
    requests: int
    context_tokens: int  # median prompt tokens of those requests


class EngineSpeed(BaseModel):
    requests: int
    prefill_alone: Rate | None = None
    prefill_shared: Rate | None = None
    decode_alone: Rate | None = None
    decode_shared: Rate | None = None


def read_timings(paths: Iterable[Path]) -> list[EngineTiming]:
    """Every readable line of the given timings files; a torn or foreign line is skipped."""
    rows: list[EngineTiming] = []
    for path in paths:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError:
            continue
        for line in lines:
            try:
                rows.append(EngineTiming.model_validate_json(line))
            except ValidationError:
                continue
    return rows


def stack_timings(state_dir: Path) -> list[EngineTiming]:
    return read_timings(sorted(state_dir.glob(TIMINGS_FILE.format(index="*"))))


def prefill_speed(rows: list[EngineTiming]) -> Rate | None:
    """New prompt tokens over prefill time, pooled over the requests that read enough."""
    read = [r for r in rows if r.prefill_rate is not None]
    if not read:
        return None
    tokens = sum(r.prefill_tokens or 0 for r in read)
    seconds = sum(r.prefill_ms or 0.0 for r in read) / 1e3
    return Rate(tokens_per_s=tokens / seconds, requests=len(read),
                context_tokens=round(statistics.median(r.prompt_tokens for r in read)))


def decode_speed(rows: list[EngineTiming]) -> Rate | None:
    """The median per-request decode rate over the requests that decoded enough."""
    decoded = [r for r in rows if r.decode_rate is not None]
    if not decoded:
        return None
    return Rate(tokens_per_s=statistics.median(r.decode_rate or 0.0 for r in decoded),
                requests=len(decoded),
                context_tokens=round(statistics.median(r.prompt_tokens for r in decoded)))


def summarise(rows: list[EngineTiming]) -> EngineSpeed:
    alone = [r for r in rows if r.in_flight_max <= 1]
    shared = [r for r in rows if r.in_flight_max > 1]
    return EngineSpeed(requests=len(rows),
                       prefill_alone=prefill_speed(alone), prefill_shared=prefill_speed(shared),
                       decode_alone=decode_speed(alone), decode_shared=decode_speed(shared))


def _part(name: str, rate: Rate | None, unit: str) -> str | None:
    if rate is None:
        return None
    return (f"{name} {rate.tokens_per_s:.0f} {unit} ({rate.requests} requests, "
            f"~{rate.context_tokens / 1000:.1f}k-token context)")


def speed_line(speed: EngineSpeed) -> str | None:
    """The run's engine speed in one line, or None when no request was timed."""
    alone = [p for p in (_part("prefill", speed.prefill_alone, "new tokens/s"),
                         _part("decode", speed.decode_alone, "tokens/s per request")) if p]
    shared = [p for p in (_part("prefill", speed.prefill_shared, "new tokens/s"),
                          _part("decode", speed.decode_shared, "tokens/s per request")) if p]
    if not alone and not shared:
        return None
    parts = []
    if alone:
        parts.append("alone: " + ", ".join(alone))
    if shared:
        parts.append("sharing the engine: " + ", ".join(shared))
    return (f"engine speed over {speed.requests} requests (llama.cpp's own timings) — "
            + "; ".join(parts))


def summarise_stack(state_dir: Path) -> str | None:
    """Summarise a stopped stack's timings into `engine_speed.json`; the line to print."""
    rows = stack_timings(state_dir)
    if not rows:
        return None
    speed = summarise(rows)
    try:
        (state_dir / SPEED_FILE).write_text(json.dumps(speed.model_dump(), indent=1) + "\n")
    except OSError:
        pass  # the line is still printed; the folder may be read-only
    return speed_line(speed)
