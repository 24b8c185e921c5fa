"""A Dynamo backend worker that serves a GGUF model with llama.cpp's server engine (xllamacpp).

Runs inside the Dynamo venv, built on Dynamo's Python backend API (`dynamo.common.backend`).
The Dynamo frontend does chat templating, tokenising, tool-call parsing, stop strings and SSE;
this worker only turns prompt token ids into generated token ids.

The engine is llama.cpp's own C++ server (`server_context`), as packaged by the prebuilt
`xllamacpp` wheel: parallel slots decoded together in one batch (continuous batching), prompt
prefix reuse per slot plus a host-memory prompt cache, LLGuidance grammars. `xllamacpp.Server`
runs it in this process and listens on an ephemeral loopback port; the worker streams from its
native `/completion` endpoint, which takes a token-id prompt and returns token ids
(`return_tokens`). Closing the stream cancels the request inside llama.cpp.

- sampling: temperature / top_p / top_k / min_p / repetition, frequency and presence
  penalties / seed from `sampling_options`;
- stopping: `max_tokens`, `min_tokens`, `stop_token_ids(_hidden)`, EOS (unless `ignore_eos`)
  and the context window;
- guided decoding (`sampling_options.guided_decoding`: `json`, `structural_tag`, `choice`,
  `grammar`) becomes an LLGuidance grammar (llamacpp_grammar.py). For `tool_choice` named or
  "required" the frontend sends a structural tag (the parser's `<tool_call>` wrapper around each
  tool's argument schema), so even a tiny model emits well-formed, parseable tool calls;
- usage on the final chunk (prompt, completion, cached prompt tokens);
- cancellation: a client disconnect stops generation;
- with --prompt-cache-dir, a long prompt's slot KV kept across worker starts
  (llamacpp_prompt_cache.py) and restored into every slot at start;
- with --timings-log, llama.cpp's own timings of each request (llamacpp_timings.py).
The engine's parameters and its threads' wait policy come from llamacpp_setup.py.

Usage (environment variables such as DYN_DISCOVERY_BACKEND are read as usual):
  python llamacpp_worker.py --model-path model.gguf --model-name NAME --tokenizer-path DIR
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import random
import tempfile
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

import aiohttp
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
from dynamo.common.configuration.groups.runtime_args import DynamoRuntimeConfig
from dynamo.llm import ModelInput
from dynamo.llm.exceptions import InvalidArgument
from llamacpp_args import parse_args  # sibling files: run as a script
from llamacpp_fanout import PrefixFanOut, slot_file_dir
from llamacpp_grammar import guided_grammar
from llamacpp_prompt_cache import PromptCache, engine_key
from llamacpp_setup import engine_params, set_thread_wait
from llamacpp_timings import TimingsLog

logger = logging.getLogger("llamacpp_worker")

# KV block size advertised to the router; llama.cpp has no paged cache, this only sizes metrics.
BLOCK_SIZE = 16

# llama.cpp's stop types → OpenAI finish reasons.
FINISH = {"eos": "stop", "word": "stop", "limit": "length"}


@dataclass
class Job:
    """One request as llama.cpp's /completion endpoint sees it, plus what the worker checks."""

    prompt: list[int]
    body: dict[str, Any]
    max_new: int
    min_new: int
    stop_ids: frozenset[int]


def sampling_fields(options: dict[str, Any]) -> dict[str, Any]:
    """Map Dynamo sampling options to /completion fields (llama.cpp defaults otherwise)."""
    names = {
        "temperature": "temperature",
        "top_p": "top_p",
        "top_k": "top_k",
        "min_p": "min_p",
        "frequency_penalty": "frequency_penalty",
        "presence_penalty": "presence_penalty",
        "repetition_penalty": "repeat_penalty",
    }
    out = {theirs: options[ours] for ours, theirs in names.items() if options.get(ours) is not None}
    if out.get("top_k") is not None and out["top_k"] < 0:  # OpenAI-style "-1 = off"
        out["top_k"] = 0
    return out


async def sse_events(resp: aiohttp.ClientResponse) -> AsyncIterator[dict[str, Any]]:
    """The JSON events of a llama.cpp SSE stream; an `error:` event raises."""
    async for raw in resp.content:
        line = raw.decode("utf-8", errors="replace").strip()
        if line.startswith("data: "):
            yield json.loads(line[6:])
        elif line.startswith("error:"):
            raise RuntimeError(f"llama.cpp: {line[6:].strip()}")


class LlamaCppEngine(LLMEngine):
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.server: Any = None
        self.params: Any = None
        self.base_url = ""
        self.session: aiohttp.ClientSession | None = None
        self.streams: dict[str, aiohttp.ClientResponse] = {}
        # Slot KV copies go through files: a RAM-backed folder where there is one with room.
        self.slot_dir = tempfile.TemporaryDirectory(prefix="llamacpp-slots-", dir=slot_file_dir())
        self.fanout = PrefixFanOut(args.parallel, args.fanout_min_tokens, self.slot_dir.name)
        self.timings = TimingsLog(args.timings_log)

    @classmethod
    async def from_args(cls, argv: list[str] | None = None) -> tuple[LlamaCppEngine, WorkerConfig]:
        args = parse_args(argv)
        set_thread_wait(args.thread_wait)  # before llama.cpp's library loads (in start)
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
        self.server = await loop.run_in_executor(None, self._load)
        self.base_url = self.server.listening_address.rstrip("/")
        # No pool limit: every in-flight request holds one stream; llama.cpp queues the excess.
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=10),
        )
        import xllamacpp

        if self.args.prompt_cache_dir:
            await self._restore_kept(xllamacpp.__version__)

        logger.info(
            "llama.cpp (xllamacpp %s) loaded %s: %d slots × %d tokens, engine at %s",
            xllamacpp.__version__, self.args.model_path, self.args.parallel, self.args.n_ctx,
            self.base_url,
        )
        return EngineConfig(
            model=self.args.tokenizer_path,
            served_model_name=self.args.model_name,
            llm=LlmRegistration(
                context_length=self.args.n_ctx,
                kv_cache_block_size=BLOCK_SIZE,
                total_kv_blocks=self.args.n_ctx * self.args.parallel // BLOCK_SIZE,
                max_num_seqs=self.args.parallel,
                max_num_batched_tokens=self.args.n_ctx,
            ),
        )

    async def _restore_kept(self, version: str) -> None:
        """Keep long prompts across starts; load the newest kept one of this setup now."""
        assert self.session is not None
        key = engine_key(self.args.model_path, version, self.args.n_ctx, self.params)
        cache = PromptCache(self.args.prompt_cache_dir, key, self.args.prompt_cache_keep)
        self.fanout.keeper = cache.store
        loop = asyncio.get_running_loop()
        try:
            found = await loop.run_in_executor(None, cache.load)
        except OSError as exc:
            logger.warning("prompt cache %s unreadable: %s", self.args.prompt_cache_dir, exc)
            return
        if found is not None:
            path, tokens = found
            await self.fanout.restore_kept(self.session, self.base_url, str(path), tokens)

    def _load(self) -> Any:
        import xllamacpp

        self.params = engine_params(self.args, self.slot_dir.name + "/")
        return xllamacpp.Server(self.params)

    def _job(self, request: GenerateRequest) -> Job:
        prompt = [int(t) for t in request.get("token_ids", [])]
        if not prompt:
            raise InvalidArgument("empty prompt")
        room = self.args.n_ctx - len(prompt)
        if room < 1:
            raise InvalidArgument(
                f"prompt is {len(prompt)} tokens; the context window is {self.args.n_ctx}"
            )
        stop = request.get("stop_conditions", {}) or {}
        options = request.get("sampling_options", {}) or {}
        stop_ids = set(stop.get("stop_token_ids_hidden") or []) | set(
            stop.get("stop_token_ids") or []
        )
        seed = options.get("seed")
        if seed is None:
            seed = self.args.seed if self.args.seed is not None else random.getrandbits(31)
        max_tokens = stop.get("max_tokens")
        max_new = min(room, max_tokens) if max_tokens is not None else room
        body: dict[str, Any] = {
            "prompt": prompt,
            "n_predict": max_new,
            "stream": True,
            "return_tokens": True,
            "cache_prompt": True,
            # Every event carries the running timings: a reply the worker ends at a stop id
            # (llama.cpp never sends its final event then) still has them.
            "timings_per_token": True,
            "seed": int(seed),
            "ignore_eos": bool(stop.get("ignore_eos")),
            **sampling_fields(options),
        }
        grammar = guided_grammar(options.get("guided_decoding"))
        if grammar is not None:
            body["grammar"] = grammar
        min_new = int(stop.get("min_tokens") or 0)
        return Job(
            prompt=prompt,
            body=body,
            max_new=max_new,
            # A grammar decides where a constrained reply ends; min_tokens yields to it.
            min_new=min(min_new, max_new) if grammar is None else 0,
            stop_ids=frozenset(int(t) for t in stop_ids),
        )

    def _phases(self, job: Job) -> list[dict[str, Any]]:
        """The /completion bodies for a job: one, or two when `min_tokens` must hold stops back.

        llama.cpp has no min_tokens: the first phase generates exactly `min_new` tokens with EOS
        and the stop ids banned, the second continues from there (its prompt is a cache hit).
        """
        if job.min_new <= 0:
            return [job.body]
        first = {
            **job.body,
            "n_predict": job.min_new,
            "ignore_eos": True,
            "logit_bias": [[t, False] for t in sorted(job.stop_ids)],
        }
        rest = {**job.body, "n_predict": job.max_new - job.min_new}
        return [first, rest] if rest["n_predict"] > 0 else [first]

    async def generate(
        self, request: GenerateRequest, context: Context
    ) -> AsyncGenerator[GenerateChunk, None]:
        if self.session is None:
            raise RuntimeError("engine not started")
        job = self._job(request)
        request_id = context.id() or str(id(job))
        produced: list[int] = []
        timing = self.timings.begin(request_id, len(job.prompt), "grammar" in job.body)
        hidden = 0  # generated but not streamed: the EOS token, a cut UTF-8 tail
        finish = "length"
        outcome = "error"  # what the timings line says if the request ends by an exception
        try:
            for body in self._phases(job):
                if produced:
                    body = {**body, "prompt": job.prompt + produced}
                start = len(produced)
                stop_type = None
                slot: int | None = None
                timings: dict[str, Any] | None = None
                try:
                    async with aclosing(self._stream(body, request_id)) as events:
                        async for event in events:
                            if int(event.get("id_slot", -1)) >= 0:  # known by the end
                                slot = int(event["id_slot"])
                            timings = event.get("timings") or timings
                            for token in await self._tokens(event, len(produced) - start):
                                timing.token_seen()
                                if token in job.stop_ids:
                                    stop_type = "eos"
                                    break
                                produced.append(token)
                                yield {"token_ids": [token], "index": 0}
                            if stop_type == "eos" or context.is_stopped():
                                break
                            if event.get("stop"):
                                stop_type = event.get("stop_type")
                                n = int(event.get("tokens_predicted") or 0)
                                hidden += max(0, n - (len(produced) - start))
                finally:
                    if timings is not None:
                        timing.phase_ended(timings)
                    if slot is not None:
                        self.fanout.ended(slot, body["prompt"] + produced[start:],
                                          self.session, self.base_url)
                if context.is_stopped():
                    finish = "cancelled"
                    break
                finish = FINISH.get(stop_type or "", "length")
                if finish == "stop":
                    break
            outcome = finish
        except aiohttp.ClientConnectionError:
            if context.is_stopped() or request_id not in self.streams:
                finish = outcome = "cancelled"  # aborted: abort() closed the stream
            else:
                raise RuntimeError("llama.cpp engine connection lost") from None
        except (GeneratorExit, asyncio.CancelledError):
            outcome = "cancelled"
            raise
        finally:
            self.timings.end(timing, outcome)
        completion = len(produced) + hidden
        prompt_n = len(job.prompt)
        yield {
            "token_ids": [],
            "index": 0,
            "finish_reason": finish,
            "completion_usage": {
                "prompt_tokens": prompt_n,
                "completion_tokens": completion,
                "total_tokens": prompt_n + completion,
                "prompt_tokens_details": {"cached_tokens": timing.cached_tokens or 0},
            },
        }

    async def _tokens(self, event: dict[str, Any], streamed: int) -> list[int]:
        """The token ids an event stands for.

        llama.cpp holds back a token that ends inside a UTF-8 character and later sends only the
        token that completes it, with the text of both: when `tokens_predicted` says tokens are
        missing, the event's text is tokenised again (exact for the cases seen: the text is
        what those tokens decode to).
        """
        tokens = [int(t) for t in event.get("tokens") or []]
        if event.get("stop"):
            return tokens
        missing = int(event.get("tokens_predicted") or 0) - streamed - len(tokens)
        if missing <= 0 or not event.get("content"):
            return tokens
        assert self.session is not None
        body = {"content": event["content"], "add_special": False, "parse_special": False}
        async with self.session.post(f"{self.base_url}/tokenize", json=body) as resp:
            resp.raise_for_status()
            return [int(t) for t in (await resp.json())["tokens"]]

    async def _stream(self, body: dict[str, Any], request_id: str) -> AsyncIterator[dict]:
        """One /completion stream; leaving it early closes the connection, which llama.cpp
        takes as a cancel and frees the slot."""
        assert self.session is not None
        async with self.session.post(f"{self.base_url}/completion", json=body) as resp:
            if resp.status != 200:
                text = await resp.text()
                try:
                    message = json.loads(text)["error"]["message"]
                except (ValueError, KeyError, TypeError):
                    message = text[:500]
                if resp.status == 400:
                    raise InvalidArgument(f"llama.cpp: {message}")
                raise RuntimeError(f"llama.cpp answered {resp.status}: {message}")
            self.streams[request_id] = resp
            try:
                async for event in sse_events(resp):
                    yield event
            finally:
                self.streams.pop(request_id, None)

    async def abort(self, context: Context) -> None:
        resp = self.streams.pop(context.id() or "", None)
        if resp is not None:
            resp.close()

    async def cleanup(self) -> None:
        for resp in list(self.streams.values()):
            resp.close()
        self.streams.clear()
        for task in list(self.fanout.tasks):
            task.cancel()
        if self.session is not None:
            await self.session.close()
            self.session = None
        # Dropping the last reference stops llama.cpp's loop and joins its thread.
        self.server = None
        self.slot_dir.cleanup()


if __name__ == "__main__":
    run(LlamaCppEngine)
