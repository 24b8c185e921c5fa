"""A Dynamo backend worker that serves a GGUF model with llama.cpp (llama-cpp-python).

Runs inside the Dynamo venv, built on Dynamo's Python backend API (`dynamo.common.backend`).
The Dynamo frontend does chat templating, tokenising, tool-call parsing, stop strings and SSE;
this worker only turns prompt token ids into generated token ids:

- sampling: temperature / top_p / top_k / min_p / repetition, frequency and presence
  penalties / seed from `sampling_options`;
- stopping: `max_tokens`, `min_tokens`, `stop_token_ids(_hidden)` and EOS (unless
  `ignore_eos`), and the context window;
- guided decoding (`sampling_options.guided_decoding`: `json`, `structural_tag`, `choice`,
  `grammar`) becomes a llama.cpp GBNF grammar. For `tool_choice` named or "required" the
  frontend sends a structural tag (the parser's `<tool_call>` wrapper around each tool's
  argument schema), so even the tiny model emits well-formed, parseable tool calls;
- usage on the final chunk (prompt, completion, cached prompt tokens);
- cancellation: a client disconnect stops generation at the next token.

One llama.cpp context serves one request at a time (requests queue in arrival order); the KV
cache of the previous request is reused for the longest common prompt prefix.

Usage (environment variables such as DYN_DISCOVERY_BACKEND are read as usual):
  python llamacpp_worker.py --model-path model.gguf --model-name NAME --tokenizer-path DIR
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import random
import threading
from collections.abc import AsyncGenerator, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from dynamo._core import Context
from dynamo.common.backend import (
    EngineConfig,
    GenerateChunk,
    GenerateRequest,
    LLMEngine,
    LlmRegistration,
    WorkerConfig,
)
from dynamo.common.backend.run import run
from dynamo.common.configuration.groups.runtime_args import (
    DynamoRuntimeArgGroup,
    DynamoRuntimeConfig,
)
from dynamo.llm import ModelInput
from dynamo.llm.exceptions import InvalidArgument
from llamacpp_grammar import guided_grammar  # a sibling file: this runs as a script

logger = logging.getLogger("llamacpp_worker")

# Save or resume a KV state only when it spares at least this many prompt tokens.
SWITCH_MIN_TOKENS = 512

# KV block size advertised to the router; llama.cpp has no paged cache, this only sizes metrics.
BLOCK_SIZE = 16


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Serve a GGUF model with llama.cpp behind the Dynamo frontend."
    )
    parser.add_argument("--model-path", required=True, help="the GGUF file")
    parser.add_argument("--model-name", required=True, help="name clients use in 'model'")
    parser.add_argument(
        "--tokenizer-path",
        default=None,
        help="folder with tokenizer.json, tokenizer_config.json (chat template) and "
        "config.json that the frontend loads; default: the GGUF's folder",
    )
    parser.add_argument(
        "--n-ctx",
        type=int,
        default=0,
        help="context window in tokens; 0 (default) = the model's trained context "
        "(8192 for SmolLM2-135M: 20 banking tool schemas alone take ~4.7k tokens)",
    )
    parser.add_argument(
        "--threads", type=int, default=None, help="CPU threads (default: usable cores, at most 8)"
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="default sampling seed for requests without one (default: random per request)",
    )
    parser.add_argument(
        "--state-slots",
        type=int,
        default=4,
        help="saved KV states kept besides the live one (each ~25 KB per token plus ~100 MB of "
        "logits), so conversations that alternate (agent and evaluator, concurrent trials) "
        "resume their long prompts instead of re-reading them; 0 disables",
    )
    parser.add_argument("--component", default="backend", help="Dynamo component name")
    parser.add_argument(
        "--shutdown-grace-s",
        type=float,
        default=1.0,
        help="on SIGTERM, seconds between leaving discovery and draining in-flight requests "
        "(Dynamo's DYN_GRACEFUL_SHUTDOWN_GRACE_PERIOD_SECS, which wins when set; Dynamo "
        "defaults to 5 s, long for a local stack stopped as a whole)",
    )
    DynamoRuntimeArgGroup().add_arguments(parser)
    return parser.parse_args(argv)


@dataclass
class Job:
    """One request as the generation thread sees it."""

    prompt: list[int]
    max_new: int
    min_new: int
    stop_ids: frozenset[int]
    sampling: dict[str, Any]
    seed: int
    grammar: Any | None
    cancelled: threading.Event = field(default_factory=threading.Event)


@dataclass
class Outcome:
    """What the generation thread reports when a request ends."""

    finish_reason: str
    completion_tokens: int
    cached_tokens: int
    error: BaseException | None = None


def sampling_kwargs(options: dict[str, Any]) -> dict[str, Any]:
    """Map Dynamo sampling options to `Llama.generate` keywords (llama.cpp defaults otherwise)."""
    out: dict[str, Any] = {}
    pairs = {
        "temperature": "temp",
        "top_p": "top_p",
        "top_k": "top_k",
        "min_p": "min_p",
        "frequency_penalty": "frequency_penalty",
        "presence_penalty": "presence_penalty",
        "repetition_penalty": "repeat_penalty",
    }
    for ours, theirs in pairs.items():
        value = options.get(ours)
        if value is not None:
            out[theirs] = value
    if out.get("top_k") is not None and out["top_k"] < 0:  # OpenAI-style "-1 = off"
        out["top_k"] = 0
    return out


def common_prefix(a: Any, b: Any) -> int:
    """Length of the common leading run of two token sequences (lists or numpy arrays)."""
    import numpy as np

    n = min(len(a), len(b))
    diff = np.flatnonzero(np.asarray(a[:n]) != np.asarray(b[:n]))
    return int(diff[0]) if diff.size else n


class LlamaCppEngine(LLMEngine):
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.llama: Any = None
        self.n_ctx = 0
        # llama.cpp contexts are not thread-safe: one thread runs every request in turn.
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="llama")
        self.jobs: dict[str, Job] = {}
        self.saved: list[Any] = []  # LlamaState, most recently used last

    @classmethod
    async def from_args(cls, argv: list[str] | None = None) -> tuple[LlamaCppEngine, WorkerConfig]:
        args = parse_args(argv)
        os.environ.setdefault(
            "DYN_GRACEFUL_SHUTDOWN_GRACE_PERIOD_SECS", f"{args.shutdown_grace_s:g}"
        )
        if not os.path.isfile(args.model_path):
            raise SystemExit(f"--model-path: GGUF file {args.model_path} not found")
        args.tokenizer_path = args.tokenizer_path or os.path.dirname(args.model_path)
        if not os.path.isfile(os.path.join(args.tokenizer_path, "tokenizer_config.json")):
            raise SystemExit(
                f"--tokenizer-path: {args.tokenizer_path} has no tokenizer_config.json"
            )
        runtime = DynamoRuntimeConfig.from_cli_args(args)
        runtime.validate()
        config = WorkerConfig.from_runtime_config(
            runtime,
            model_name=args.tokenizer_path,
            served_model_name=args.model_name,
            model_input=ModelInput.Tokens,
            component=args.component,
            # No KV events from llama.cpp: the router should not wait for any.
            enable_kv_routing=False,
        )
        return cls(args), config

    async def start(self, worker_id: int) -> EngineConfig:
        del worker_id
        loop = asyncio.get_running_loop()
        self.llama = await loop.run_in_executor(self.executor, self._load)
        self.n_ctx = self.llama.n_ctx()
        logger.info("llama.cpp loaded %s (n_ctx %d)", self.args.model_path, self.n_ctx)
        return EngineConfig(
            model=self.args.tokenizer_path,
            served_model_name=self.args.model_name,
            llm=LlmRegistration(
                context_length=self.n_ctx,
                kv_cache_block_size=BLOCK_SIZE,
                total_kv_blocks=self.n_ctx // BLOCK_SIZE,
                max_num_seqs=1,
                max_num_batched_tokens=self.n_ctx,
            ),
        )

    def _load(self) -> Any:
        from llama_cpp import Llama

        # Usable cores (cgroup/affinity aware), at most 8: a small model gains nothing from more
        # and loses to thread synchronisation.
        threads = self.args.threads or min(8, len(os.sched_getaffinity(0)))
        return Llama(
            model_path=self.args.model_path,
            n_ctx=self.args.n_ctx,
            n_threads=threads,
            n_threads_batch=threads,
            verbose=False,
        )

    def _job(self, request: GenerateRequest) -> Job:
        prompt = [int(t) for t in request.get("token_ids", [])]
        if not prompt:
            raise InvalidArgument("empty prompt")
        room = self.n_ctx - len(prompt)
        if room < 1:
            raise InvalidArgument(
                f"prompt is {len(prompt)} tokens; the context window is {self.n_ctx}"
            )
        stop = request.get("stop_conditions", {}) or {}
        options = request.get("sampling_options", {}) or {}
        stop_ids = set(stop.get("stop_token_ids_hidden") or []) | set(
            stop.get("stop_token_ids") or []
        )
        if not stop.get("ignore_eos"):
            stop_ids.add(self.llama.token_eos())
        seed = options.get("seed")
        if seed is None:
            seed = self.args.seed if self.args.seed is not None else random.getrandbits(31)
        max_new = stop.get("max_tokens")
        return Job(
            prompt=prompt,
            max_new=min(room, max_new) if max_new is not None else room,
            min_new=int(stop.get("min_tokens") or 0),
            stop_ids=frozenset(int(t) for t in stop_ids),
            sampling=sampling_kwargs(options),
            seed=int(seed),
            grammar=guided_grammar(options.get("guided_decoding")),
        )

    async def generate(
        self, request: GenerateRequest, context: Context
    ) -> AsyncGenerator[GenerateChunk, None]:
        if self.llama is None:
            raise RuntimeError("engine not started")
        job = self._job(request)
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[int | Outcome] = asyncio.Queue()

        def emit(item: int | Outcome) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, item)

        request_id = context.id()
        if request_id is not None:
            self.jobs[request_id] = job
        self.executor.submit(self._run_job, job, emit)
        try:
            while not isinstance(item := await queue.get(), Outcome):
                if context.is_stopped():
                    job.cancelled.set()
                yield {"token_ids": [item], "index": 0}
        finally:
            # Also reached when the consumer goes away mid-stream: the thread stops at its
            # next token instead of generating for nobody.
            job.cancelled.set()
            if request_id is not None:
                self.jobs.pop(request_id, None)
        if item.error is not None:
            logger.error("generation failed: %r", item.error)
            raise RuntimeError(f"llama.cpp generation failed: {item.error}")
        prompt_n = len(job.prompt)
        yield {
            "token_ids": [],
            "index": 0,
            "finish_reason": item.finish_reason,
            "completion_usage": {
                "prompt_tokens": prompt_n,
                "completion_tokens": item.completion_tokens,
                "total_tokens": prompt_n + item.completion_tokens,
                "prompt_tokens_details": {"cached_tokens": item.cached_tokens},
            },
        }

    def _run_job(self, job: Job, emit: Any) -> None:
        """Runs on the llama thread: generate until a stop condition, emitting each token."""
        produced = 0
        cached = 0
        try:
            if job.cancelled.is_set():
                emit(Outcome("cancelled", 0, 0))
                return
            self._switch_state(job.prompt)
            cached = self._cached_prefix(job.prompt)
            self.llama.set_seed(job.seed)
            finish = "length"
            for token in self._tokens(job):
                produced += 1
                if job.cancelled.is_set():
                    finish = "cancelled"
                    break
                if token in job.stop_ids:
                    finish = "stop"
                    break
                emit(token)
                if produced >= job.max_new:
                    break
            emit(Outcome(finish, produced, cached))
        except BaseException as exc:  # keep the worker alive; the request gets the error
            emit(Outcome("error", produced, cached, error=exc))

    def _tokens(self, job: Job) -> Iterator[int]:
        processors = None
        if job.min_new > 0 and job.stop_ids:
            from llama_cpp import LogitsProcessorList

            start = len(job.prompt)
            banned = list(job.stop_ids)

            def hold_stops(input_ids: Any, scores: Any) -> Any:
                if len(input_ids) - start < job.min_new:
                    scores[banned] = -float("inf")
                return scores

            processors = LogitsProcessorList([hold_stops])
        return self.llama.generate(
            job.prompt, grammar=job.grammar, logits_processor=processors, **job.sampling
        )

    def _cached_prefix(self, prompt: list[int]) -> int:
        """Prompt tokens whose KV the live context already holds (reused by llama.cpp)."""
        live = self.llama.input_ids[: self.llama.n_tokens]
        return min(common_prefix(live, prompt), len(prompt) - 1)

    def _switch_state(self, prompt: list[int]) -> None:
        """Keep a long live context that this prompt would overwrite; resume a better saved one.

        Prefill is the expensive part on CPU (a 4.7k-token prompt with 20 tool schemas takes
        ~27 s on 2 cores); saving or loading a state takes well under a second.
        """
        if self.args.state_slots <= 0:
            return
        live_n = self.llama.n_tokens
        live_match = common_prefix(self.llama.input_ids[:live_n], prompt)
        if live_n - live_match >= SWITCH_MIN_TOKENS:
            self._save_live()
        best, best_match = None, live_match
        for state in self.saved:
            match = common_prefix(state.input_ids[: state.n_tokens], prompt)
            if match > best_match:
                best, best_match = state, match
        if best is not None and best_match - live_match >= SWITCH_MIN_TOKENS:
            self.llama.load_state(best)
            self.saved.remove(best)
            self.saved.append(best)
            logger.debug("resumed a saved state: %d of %d prompt tokens", best_match, len(prompt))

    def _save_live(self) -> None:
        n = self.llama.n_tokens
        ids = self.llama.input_ids[:n]
        # A saved state that the live one extends (or repeats) is superseded by it.
        self.saved = [
            st
            for st in self.saved
            if not (
                st.n_tokens <= n and common_prefix(ids, st.input_ids[: st.n_tokens]) == st.n_tokens
            )
        ]
        self.saved.append(self.llama.save_state())
        del self.saved[: -self.args.state_slots]

    async def abort(self, context: Context) -> None:
        job = self.jobs.get(context.id() or "")
        if job is not None:
            job.cancelled.set()

    async def cleanup(self) -> None:
        for job in list(self.jobs.values()):
            job.cancelled.set()
        self.executor.shutdown(wait=True, cancel_futures=True)
        self.saved.clear()
        llama, self.llama = self.llama, None
        if llama is not None:
            llama.close()


if __name__ == "__main__":
    run(LlamaCppEngine)
