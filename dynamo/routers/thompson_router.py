"""A Dynamo router component that picks each request's worker by Thompson sampling.

Runs in the Dynamo venv between the frontend and the workers, the way Dynamo's own
experimental component routers do: it registers the model (token input, chat + completions)
on its own endpoint, so the frontend sends it preprocessed requests; it watches the workers'
`generate` endpoint through a runtime client and forwards each request to the instance it
chose with the client's direct-to-instance call. Workers live in another namespace than the
frontend's (`--namespace` on the frontend), so the frontend never reaches them around it.

What it uses from the request: `agent_context.session_id` (the `x-dynamo-session-id`
header), `routing.expected_output_tokens` (`nvext.agent_hints.osl`), the prompt's token ids
(prefix overlap with what it sent each worker) and its own per-session turn count. What it
learns: TTFT per worker, measured here from forwarding to the first token, and failures
before the first token (retried on another worker, so the client loses nothing).

One JSON line per request goes to `--decisions`, keyed by the frontend's request id (the
frontend's request trace maps that id to the client's `x-request-id`).

Usage (Dynamo venv): python thompson_router.py --model-path DIR --model-name NAME
    --worker-endpoint dyn://ns.backend.generate --endpoint ns2.thompson.generate
    --min-workers N --decisions FILE [--seed S] [policy weights, see --help]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from dataclasses import fields
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from thompson_policy import PolicyConfig, ThompsonPolicy, prefix_blocks  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model-path", required=True)
    ap.add_argument("--model-name", required=True)
    ap.add_argument("--worker-endpoint", required=True, help="dyn://namespace.component.endpoint")
    ap.add_argument("--endpoint", required=True, help="this router's namespace.component.endpoint")
    ap.add_argument("--min-workers", type=int, default=1,
                    help="register the model only once this many workers are up")
    ap.add_argument("--decisions", required=True, help="JSONL file, one line per request")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--max-attempts", type=int, default=3,
                    help="workers tried before a request fails (failures before a first token)")
    ap.add_argument("--tool-call-parser", default=None)
    ap.add_argument("--reasoning-parser", default=None)
    for f in fields(PolicyConfig):
        ap.add_argument(f"--{f.name.replace('_', '-')}", type=type(f.default), default=f.default,
                        help=f"policy: {f.name} (default {f.default})")
    return ap.parse_args(argv)


def _data(item):
    return item.data() if hasattr(item, "data") else item


def _continue(request: dict, generated: list[int]) -> dict:
    """The request to send after `generated` tokens already reached the client elsewhere."""
    if not generated:
        return request
    again = dict(request, token_ids=list(request["token_ids"]) + generated)
    stop = dict(request.get("stop_conditions") or {})
    if stop.get("max_tokens") is not None:
        stop["max_tokens"] = max(1, stop["max_tokens"] - len(generated))
    again["stop_conditions"] = stop
    return again


class Router:
    def __init__(self, client, policy: ThompsonPolicy, decisions: Path, max_attempts: int,
                 block_size: int) -> None:
        self.client = client
        self.policy = policy
        self.max_attempts = max_attempts
        self.block_size = block_size
        self.out = decisions.open("a", buffering=1)
        self.known: set[int] = set()

    def _candidates(self) -> tuple[list[int], dict[int, str]]:
        addresses = {i.instance_id: i.transport.address for i in self.client.instances()}
        ids = sorted(self.client.instance_ids())
        for gone in self.known - set(ids):
            self.policy.forget_worker(gone)
        self.known = set(ids)
        return ids, addresses

    async def generate(self, request: dict, context):
        t0 = time.time()
        agent = request.get("agent_context") or {}
        routing = request.get("routing") or {}
        session = agent.get("session_id") if isinstance(agent, dict) else None
        osl = routing.get("expected_output_tokens") if isinstance(routing, dict) else None
        blocks = prefix_blocks(list(request.get("token_ids") or []), self.block_size)
        record = {"request_id": context.id(), "ts": t0, "session_id": session,
                  "priority": routing.get("priority") if isinstance(routing, dict) else None,
                  "prompt_tokens": len(request.get("token_ids") or []), "attempts": []}
        tried: set[int] = set()
        worker = None
        generated: list[int] = []  # tokens already sent to the client
        first_at = None
        try:
            for attempt in range(self.max_attempts):
                ids, addresses = self._candidates()
                worker, decision = self.policy.choose(ids, blocks=blocks, session=session,
                                                      osl=osl, exclude=tried)
                if attempt == 0:
                    record.update(decision)
                record["chosen"] = worker
                record["worker_address"] = addresses.get(worker)
                self.policy.started(worker, session, osl)
                sent = time.perf_counter_ns()
                try:
                    stream = await self.client.direct(_continue(request, generated), worker,
                                                      context=context)
                    async for item in stream:
                        chunk = _data(item)
                        toks = chunk.get("token_ids") if isinstance(chunk, dict) else None
                        if first_at is None and (toks or (isinstance(chunk, dict)
                                                          and chunk.get("finish_reason"))):
                            first_at = time.perf_counter_ns()
                            ttft_ms = (first_at - sent) / 1e6
                            record["ttft_ms"] = round(ttft_ms, 3)
                            self.policy.observe_ttft(worker, ttft_ms, blocks)
                        generated.extend(toks or [])
                        yield chunk
                    if first_at is None:  # an empty stream: nothing reached the client
                        raise RuntimeError("worker ended the stream without output")
                    record["outcome"] = "ok" if attempt == 0 else "ok after retry"
                    return
                except Exception as exc:  # noqa: BLE001 - any transport error counts
                    # Before the first token: retry elsewhere. After: continue elsewhere from
                    # the tokens already sent (prompt + generated so far), as Dynamo's own
                    # request migration does, so the client sees one uninterrupted stream.
                    self.policy.observe_failure(worker)
                    tried.add(worker)
                    record["attempts"].append({"worker": worker, "error": f"{exc}"[:200],
                                               "tokens_before": len(generated)})
                finally:
                    self.policy.finished(worker, osl)
            record["outcome"] = "failed"
            raise RuntimeError(f"no worker answered after {len(tried)} attempts")
        except LookupError as exc:
            record["outcome"] = f"failed: {exc}"
            raise
        finally:
            record["output_tokens"] = len(generated)
            record["total_ms"] = round((time.time() - t0) * 1000, 3)
            self.out.write(json.dumps(record) + "\n")


async def serve(args: argparse.Namespace) -> None:
    from dynamo.llm import (
        ModelInput,
        ModelRuntimeConfig,
        ModelType,
        WorkerType,
        register_model,
    )
    from dynamo.runtime import DistributedRuntime, dynamo_worker

    @dynamo_worker()
    async def worker(runtime: DistributedRuntime) -> None:
        client = await runtime.endpoint(args.worker_endpoint.removeprefix("dyn://")).client()
        await client.wait_for_instances()
        while len(client.instance_ids()) < args.min_workers:
            await asyncio.sleep(0.2)
        config = PolicyConfig(**{f.name: getattr(args, f.name) for f in fields(PolicyConfig)})
        router = Router(client, ThompsonPolicy(config, args.seed), Path(args.decisions),
                        args.max_attempts, config.block_size)
        endpoint = runtime.endpoint(args.endpoint)
        runtime_config = ModelRuntimeConfig()
        if args.tool_call_parser:
            runtime_config.tool_call_parser = args.tool_call_parser
        if args.reasoning_parser:
            runtime_config.reasoning_parser = args.reasoning_parser
        await register_model(
            model_input=ModelInput.Tokens,
            model_type=ModelType.Chat | ModelType.Completions,
            endpoint=endpoint, model_path=args.model_path, model_name=args.model_name,
            runtime_config=runtime_config, worker_type=WorkerType.Aggregated,
        )
        print(f"thompson router: {len(client.instance_ids())} workers, serving "
              f"{args.model_name} at {args.endpoint}", flush=True)
        await endpoint.serve_endpoint(router.generate, graceful_shutdown=True)

    await worker()


def main() -> None:
    import uvloop

    args = parse_args()
    Path(args.decisions).parent.mkdir(parents=True, exist_ok=True)
    uvloop.run(serve(args))


if __name__ == "__main__":
    main()
