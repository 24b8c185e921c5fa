"""Thompson-sampling worker choice for agent traffic: the policy alone, stdlib only.

Kept apart from the Dynamo component (`thompson_router.py`) so the learning can be tested
without a server. Per worker it keeps
- a Gaussian posterior over the mean of log TTFT (ms) measured at the router, with a known
  observation spread and exponential forgetting (a worker that slows down is noticed), and
- a Beta posterior over the chance a request fails on that worker before its first token.
For each request it samples both, adds what the agent's context says (prefix overlap with what
this router sent the worker before, the session's previous worker, the expected output tokens
already queued on the worker) and picks the lowest cost.

Costs are in log-milliseconds so the terms add up to "how many times slower" rather than to a
hand-tuned score; the weights below are the only knobs and are command-line options.
"""

from __future__ import annotations

import math
import random
from collections import OrderedDict
from dataclasses import dataclass, field


@dataclass
class PolicyConfig:
    prior_log_ttft: float = math.log(50.0)  # prior mean: 50 ms
    prior_sd: float = 1.0  # wide: one observation moves it a lot
    obs_sd: float = 0.5  # spread of one log-TTFT observation around the worker's mean
    forget: float = 0.98  # per observation; old evidence fades so a slowed worker is seen
    overlap_weight: float = 1.0  # log-ms saved when the whole prompt is cached there
    affinity_weight: float = 0.2  # bonus for the session's previous worker
    queue_weight: float = 0.5  # log-ms per 1000 expected output tokens queued on the worker
    fail_weight: float = 3.0  # log-ms per unit of sampled failure probability
    default_osl: int = 256  # expected output tokens when the agent gives no hint
    block_size: int = 16  # prefix blocks for overlap: the mocker's KV block size (model card)
    max_blocks_per_worker: int = 20000  # LRU bound on remembered prefix blocks


@dataclass
class WorkerPosterior:
    mean: float
    precision: float
    # Beta posterior of failing before the first token; the prior (mean ~5 %) says workers
    # usually answer, so an untried worker is not shunned as if it were a coin flip.
    ok: float = 10.0
    failed: float = 0.5
    observations: int = 0
    inflight_tokens: int = 0  # expected output tokens of requests now running there
    inflight: int = 0
    blocks: OrderedDict = field(default_factory=OrderedDict)


def prefix_blocks(token_ids: list[int], block_size: int) -> list[int]:
    """Chained hashes of the prompt's full blocks: block k's hash covers blocks 0..k."""
    out, prev = [], 0
    for start in range(0, len(token_ids) - block_size + 1, block_size):
        prev = hash((prev, tuple(token_ids[start:start + block_size])))
        out.append(prev)
    return out


class ThompsonPolicy:
    def __init__(self, config: PolicyConfig | None = None, seed: int | None = None) -> None:
        self.config = config or PolicyConfig()
        self.rng = random.Random(seed)
        self.workers: dict[int, WorkerPosterior] = {}
        self.session_worker: dict[str, int] = {}
        self.session_turns: dict[str, int] = {}

    def _posterior(self, worker: int) -> WorkerPosterior:
        if worker not in self.workers:
            c = self.config
            self.workers[worker] = WorkerPosterior(c.prior_log_ttft, 1.0 / c.prior_sd ** 2)
        return self.workers[worker]

    def overlap(self, worker: int, blocks: list[int]) -> float:
        """Share of the prompt's blocks whose prefix this router already sent to `worker`."""
        if not blocks:
            return 0.0
        seen = self._posterior(worker).blocks
        n = 0
        for h in blocks:
            if h not in seen:
                break
            n += 1
        return n / len(blocks)

    def choose(self, candidates: list[int], *, blocks: list[int], session: str | None,
               osl: int | None, exclude: set[int] = frozenset()) -> tuple[int, dict]:
        """Pick a worker; return it and the decision record (every candidate's terms)."""
        c = self.config
        pool = [w for w in candidates if w not in exclude]
        if not pool:
            raise LookupError("no worker instance available")
        turn = self.session_turns.get(session, 0) if session else None
        previous = self.session_worker.get(session) if session else None
        # An untried worker's prior mean is the pooled mean of the tried ones (empirical
        # Bayes): a fixed prior far from this engine's real TTFT would never let it be tried.
        tried = [self._posterior(w).mean for w in pool if self._posterior(w).observations]
        pooled = sum(tried) / len(tried) if tried else c.prior_log_ttft
        rows = []
        for w in pool:
            p = self._posterior(w)
            mean = p.mean if p.observations else pooled
            sampled = self.rng.gauss(mean, 1.0 / math.sqrt(p.precision))
            p_fail = self.rng.betavariate(p.failed, p.ok)
            ov = self.overlap(w, blocks)
            cost = (sampled + c.fail_weight * p_fail
                    + c.queue_weight * p.inflight_tokens / 1000.0
                    - c.overlap_weight * ov
                    - (c.affinity_weight if w == previous else 0.0))
            rows.append({"worker": w, "cost": round(cost, 4), "sampled_log_ttft": round(sampled, 4),
                         "mean_ttft_ms": round(math.exp(mean), 2),
                         "sd_log": round(1.0 / math.sqrt(p.precision), 4),
                         "p_fail": round(p_fail, 4), "overlap": round(ov, 4),
                         "inflight": p.inflight, "inflight_tokens": p.inflight_tokens,
                         "observations": p.observations})
        best = min(rows, key=lambda r: r["cost"])
        reason = _reason(best, rows, previous)
        decision = {"turn": turn, "previous_worker": previous, "osl": osl,
                    "prompt_blocks": len(blocks), "candidates": rows,
                    "chosen": best["worker"], "reason": reason}
        return best["worker"], decision

    def started(self, worker: int, session: str | None, osl: int | None) -> None:
        p = self._posterior(worker)
        p.inflight += 1
        p.inflight_tokens += osl or self.config.default_osl
        if session:
            self.session_worker[session] = worker
            self.session_turns[session] = self.session_turns.get(session, 0) + 1

    def finished(self, worker: int, osl: int | None) -> None:
        p = self._posterior(worker)
        p.inflight = max(0, p.inflight - 1)
        p.inflight_tokens = max(0, p.inflight_tokens - (osl or self.config.default_osl))

    def observe_ttft(self, worker: int, ttft_ms: float, blocks: list[int]) -> None:
        """A first token arrived after `ttft_ms`: update the worker's TTFT posterior and
        remember the prompt's blocks as cached there."""
        c = self.config
        p = self._posterior(worker)
        # Forgetting: shrink the prior's precision towards the prior's, then add the datum.
        floor = 1.0 / c.prior_sd ** 2
        prec0 = max(floor, p.precision * c.forget)
        obs_prec = 1.0 / c.obs_sd ** 2
        x = math.log(max(ttft_ms, 0.01))
        p.mean = (prec0 * p.mean + obs_prec * x) / (prec0 + obs_prec)
        p.precision = prec0 + obs_prec
        p.ok += 1
        p.observations += 1
        for h in blocks:
            p.blocks[h] = None
            p.blocks.move_to_end(h)
        while len(p.blocks) > c.max_blocks_per_worker:
            p.blocks.popitem(last=False)

    def observe_failure(self, worker: int) -> None:
        self._posterior(worker).failed += 1

    def forget_worker(self, worker: int) -> None:
        """The worker left discovery: drop its state and any session pinned to it."""
        self.workers.pop(worker, None)
        for s in [s for s, w in self.session_worker.items() if w == worker]:
            del self.session_worker[s]


def _reason(best: dict, rows: list[dict], previous: int | None) -> str:
    if len(rows) == 1:
        return "only candidate"
    parts = []
    if best["worker"] == previous:
        parts.append("session's previous worker")
    if best["overlap"] > 0 and best["overlap"] >= max(r["overlap"] for r in rows):
        parts.append(f"largest prefix overlap {best['overlap']:.0%}")
    if best["sampled_log_ttft"] <= min(r["sampled_log_ttft"] for r in rows):
        parts.append("lowest sampled TTFT")
    if best["inflight_tokens"] <= min(r["inflight_tokens"] for r in rows):
        parts.append("least queued output")
    return ", ".join(parts) or "lowest combined cost"
