"""The HTTP routes: NeMo Evaluator's `generic` agent (`POST /invoke`, JSON in and out) and the
NeMo Agent Toolkit protocol (`POST /generate/full`, Server-Sent Events).

Concurrency: at most `max_concurrency` episodes run; a request beyond that gets 429 with
Retry-After at once instead of waiting in a queue, so an evaluator's own concurrency setting
stays the one that shapes the load on the LLM server (and its retry on 429 applies).
Each episode has `request_timeout_s`; past it the episode is cancelled (504, or an error chunk
on a stream). A client that leaves a stream cancels its episode the same way.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ValidationError

from bankbench.agent_server.episode import (
    UnknownScenario,
    new_request_id,
    run_episode,
    scenario_ids,
    task_dir,
)
from bankbench.agent_server.models import (
    ErrorBody,
    InvokeRequest,
    NatRequest,
    ServerConfig,
    ToolStep,
)

MAX_BODY_BYTES = 1_000_000


class Slots:
    """A non-blocking counter of running episodes (one event loop: no lock needed)."""

    def __init__(self, limit: int) -> None:
        self.limit, self.active = limit, 0

    def try_take(self) -> Callable[[], None] | None:
        if self.active >= self.limit:
            return None
        self.active += 1
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                self.active -= 1
        return release


def _error(status: int, error: str, detail: str, headers: dict | None = None) -> JSONResponse:
    return JSONResponse(ErrorBody(error=error, detail=detail).model_dump(), status_code=status,
                        headers=headers)


async def _parse[M: BaseModel](request: Request, model: type[M]) -> M | JSONResponse:
    """The body as `model`; 400 for bytes that are not JSON, 422 for JSON of the wrong shape."""
    body = await request.body()
    if len(body) > MAX_BODY_BYTES:
        return _error(413, "too_large", f"request body over {MAX_BODY_BYTES} bytes")
    try:
        return model.model_validate_json(body)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_input=False)
        if any(e["type"] == "json_invalid" for e in errors):
            return _error(400, "malformed_json", "request body is not valid JSON")
        detail = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}"
                           for e in errors)
        return _error(422, "invalid_request", detail)


def _nat_step(step: ToolStep, kind: str) -> str:
    """One NAT IntermediateStep SSE line (`intermediate_data: {…, "payload": "<json>"}`)."""
    step_id = str(uuid.uuid4())
    data: dict[str, Any] = ({"input": step.arguments} if kind == "TOOL_START"
                            else {"input": step.arguments, "output": step.observation})
    payload = {"event_type": kind, "event_timestamp": time.time(), "name": step.tool,
               "UUID": step_id, "data": data,
               "metadata": {"provided_metadata": {"attempt": step.attempt, "ok": step.ok}}}
    line = {"id": step_id, "parent_id": "root", "type": kind, "name": step.tool,
            "payload": json.dumps(payload)}
    return f"intermediate_data: {json.dumps(line)}\n\n"


def _nat_final(value: str, error: dict | None = None) -> str:
    body: dict[str, Any] = {"value": value}
    if error:
        body["error"] = error
    return f"data: {json.dumps(body)}\n\n"


def _allowed_steps(filter_steps: str | None) -> set[str] | None:
    """NAT's `filter_steps`: absent = every step, `none` = no step, else a list of types."""
    if not filter_steps:
        return None
    if filter_steps.lower() == "none":
        return set()
    return {t.strip() for t in filter_steps.split(",") if t.strip()}


async def _stop(task: asyncio.Task, why: str) -> None:
    """Cancel an episode once and wait for it to write its records. The wait is shielded: the
    server cancels a stream's code again at each await once its client has gone, and a second
    cancel would cut the episode's own clean-up (status file, bank copy) short."""
    task.cancel(why)
    await asyncio.shield(asyncio.gather(task, return_exceptions=True))


class _SlotStream(StreamingResponse):
    """A streaming response that frees its slot however the stream ends (even unstarted)."""

    def __init__(self, content: AsyncIterator[str], release: Callable[[], None],
                 **kwargs: Any) -> None:
        super().__init__(content, **kwargs)
        self._release = release

    async def __call__(self, scope, receive, send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._release()


def create_app(config: ServerConfig) -> FastAPI:
    app = FastAPI(title="bankbench agent-server", version="1",
                  description="The bankbench banking agent for NeMo Evaluator agent targets.")
    slots = Slots(config.max_concurrency)
    app.state.slots = slots
    app.state.tasks: set[asyncio.Task] = set()  # running episodes, for /health and shutdown

    def _resolve(scenario: str | None) -> str:
        if scenario is None:
            known = scenario_ids(config.tasks_dir)
            if not known:
                raise UnknownScenario(f"no task with a bank in {config.tasks_dir}")
            return known[0]
        task_dir(config.tasks_dir, scenario)
        return scenario

    def _busy() -> JSONResponse:
        return _error(429, "busy", f"{slots.limit} episodes already running; retry later",
                      headers={"Retry-After": "1"})

    app.state.started = 0

    @app.get("/health")
    async def health() -> dict:
        # `active` counts slots held by requests; `running` the episodes not yet ended, one
        # being stopped after its request ended included; the totals are since the start.
        running = len(app.state.tasks)
        return {"status": "ok", "active": slots.active, "max_concurrency": slots.limit,
                "running": running, "episodes_started": app.state.started,
                "episodes_finished": app.state.started - running}

    @app.get("/scenarios")
    async def scenarios() -> dict:
        return {"scenarios": scenario_ids(config.tasks_dir)}

    def _start(scenario: str, message: str | None, on_step=None, rid: str | None = None):
        task = asyncio.create_task(run_episode(config, scenario, message, on_step, rid))
        app.state.started += 1
        app.state.tasks.add(task)
        task.add_done_callback(app.state.tasks.discard)
        return task

    @app.post("/invoke")
    async def invoke(request: Request):
        parsed = await _parse(request, InvokeRequest)
        if isinstance(parsed, JSONResponse):
            return parsed
        try:
            scenario = _resolve(parsed.scenario)
        except UnknownScenario as exc:
            return _error(404, "unknown_scenario", str(exc))
        release = slots.try_take()
        if release is None:
            return _busy()
        try:
            task = _start(scenario, parsed.message)
            try:
                result = await asyncio.wait_for(asyncio.shield(task), config.request_timeout_s)
            except TimeoutError:
                await _stop(task, f"request timeout ({config.request_timeout_s:g} s)")
                return _error(504, "timeout",
                              f"episode exceeded {config.request_timeout_s:g} s and was stopped")
            except asyncio.CancelledError:
                await _stop(task, "request cancelled")
                raise
            except Exception as exc:  # ours, not the agent's (it never raises for those)
                return _error(500, "server_error", f"episode failed: {type(exc).__name__}")
        finally:
            release()
        return JSONResponse(result.model_dump(mode="json"))

    @app.post("/generate/full")
    async def generate_full(request: Request, filter_steps: str | None = None):
        parsed = await _parse(request, NatRequest)
        if isinstance(parsed, JSONResponse):
            return parsed
        known = scenario_ids(config.tasks_dir)
        message: str | None = parsed.input_message
        wanted = parsed.scenario
        if wanted is None and message.strip() in known:
            wanted, message = message.strip(), None  # a bare scenario id: its own instruction
        try:
            scenario = _resolve(wanted)
        except UnknownScenario as exc:
            return _error(404, "unknown_scenario", str(exc))
        release = slots.try_take()
        if release is None:
            return _busy()
        rid = new_request_id(scenario)
        allowed = _allowed_steps(filter_steps)
        return _SlotStream(_nat_stream(scenario, message, rid, allowed), release,
                           media_type="text/event-stream",
                           headers={"X-Request-Id": rid, "Cache-Control": "no-cache"})

    async def _nat_stream(scenario: str, message: str | None, rid: str,
                          allowed: set[str] | None) -> AsyncIterator[str]:
        queue: asyncio.Queue[ToolStep | None] = asyncio.Queue()
        task = _start(scenario, message, queue.put_nowait, rid)
        task.add_done_callback(lambda _t: queue.put_nowait(None))
        deadline = time.monotonic() + config.request_timeout_s
        try:
            while True:
                try:
                    step = await asyncio.wait_for(queue.get(), deadline - time.monotonic())
                except TimeoutError:
                    await _stop(task, f"request timeout ({config.request_timeout_s:g} s)")
                    yield _nat_final("", {"code": "timeout", "message": "episode exceeded "
                                          f"{config.request_timeout_s:g} s and was stopped"})
                    return
                if step is None:
                    break
                for kind in ("TOOL_START", "TOOL_END"):
                    if allowed is None or kind in allowed:
                        yield _nat_step(step, kind)
            try:
                result = task.result()
            except Exception as exc:  # the agent never raises for its own or the server's
                # failures, so this is ours; say what, not the traceback
                yield _nat_final("", {"code": "server_error", "message": type(exc).__name__})
                return
            yield _nat_final(result.answer)
        finally:
            if not task.done():  # the client left: stop the episode, keep its records
                await _stop(task, "request cancelled: the client disconnected")

    return app

