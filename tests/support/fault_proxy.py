"""FAULT-INJECTING TEST PROXY — not a model server.

It exists only because the real Dynamo frontend cannot be made to fail on demand. It sits
between the client under test and a real upstream (the Dynamo frontend), forwards requests and
streams responses through unchanged, except for the requests its schedule marks: those get an
HTTP error, a connection dropped before the first byte or in the middle of the stream, a stall
longer than the client's timeout, or a malformed SSE event.

    schedule = FaultSchedule.seeded(seed=7, n=20, faults=["http_429", "drop_mid_stream"])
    async with FaultProxy(upstream="http://127.0.0.1:8000", schedule=schedule) as proxy:
        ...  # point the client at proxy.base_url ("http://127.0.0.1:<port>/v1")

Request n (0-based, counting every POST the proxy sees) gets `schedule.faults[n]` or passes
through when there is none; `proxy.seen` lists what each request got.

With `FaultSchedule(down_sessions={i, j, …})` an outage hits whole agent sessions instead: every
request of the i-th, j-th … session (0-based, in the order each session's first request reached
the proxy, by `x-dynamo-session-id`) gets a 503, retries included, so each of those trials
exhausts its tries whatever the timing (`proxy.downed` lists those sessions). A run of
consecutive request indices would not: concurrent retries and new trials share it out. With
`FaultSchedule(degrade_above=K)` it also degrades, as an overloaded server might, the reply of
every request that was in flight together with more than K requests (itself included): its tool
call arrives as cut-off text the client cannot parse and `finish_reason` is "length"
(`proxy.degraded` counts them). Such replies are buffered whole before they are sent.

With `FaultSchedule(degrade_above=K, stays_degraded=True)` load breaks the server for good
instead: the first time more than K agent sessions are open together (a session open from its
first request, by `x-dynamo-session-id`, until its final one, `x-dynamo-session-final: true`)
or, where more, more than K requests are in flight, the replies of the requests in flight and
of every request after them are degraded, whatever load each meets (`proxy.overloaded_at` is
the index of the request that took it above K). Load above K then decides whether and from
when replies are degraded, not which ones: which requests overlap exactly depends on the host's
timing (the client's overhead between requests and between sessions against the reply time), so
the share of replies degraded at a load just above K, and every figure on the decisions made
from them, changes from host to host; sessions overlap far longer than their requests. A
session that never sends its final request stays open. The proxy serves one search and sees
its levels in the order the search runs them: any level after the one that crossed K is
degraded whatever its own load.

With `FaultSchedule(integrity="<class>", integrity_above=K)` it breaks tool calls the way that
tool-call integrity class names (tests/support/tool_call_faults.py · corrupt): every reply that
carries a tool call and was in flight together with more than K requests (with probability
`integrity_rate`, seeded by `seed`); `proxy.corrupted` counts them. Such replies are buffered
whole too. Replies in flight with at most K others pass unchanged.

With `FaultSchedule(rescript=f)` it changes decisions rather than breaking them: at the first
request of each agent session (`x-dynamo-session-id`), `f(prefix, k, in_flight)` picks the
response-replay script the real mocker replays for the whole session — `prefix` the script the
client asked for (`output_replay_id:<prefix>:<i>`), `k` how many sessions of that prefix came
before, `in_flight` the requests in flight as the session began — and every request of the
session is sent upstream with the chosen prefix (`proxy.rescripted` counts changed sessions).
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal

from aiohttp import ClientResponse, ClientSession, ClientTimeout, web

from tests.support.tool_call_faults import FAULTS, corrupt

Fault = Literal[
    "pass",
    "http_400",
    "http_429",
    "http_529",
    "http_500",
    "http_503",
    "drop_before_first_byte",
    "drop_mid_stream",
    "stall",
    "malformed_sse",
]
_HOP_HEADERS = {"host", "content-length", "transfer-encoding", "connection", "keep-alive"}


@dataclass
class FaultSchedule:
    faults: list[Fault] = field(default_factory=list)
    stall_s: float = 30.0  # how long a "stall" holds the connection without sending a byte
    # A careless server that quotes the request's Authorization header in its error bodies:
    # lets tests prove the client scrubs the key from what it records.
    echo_auth_in_errors: bool = False
    # Load-dependent degradation: a request that was ever in flight together with more than
    # this many requests (itself included) gets its reply degraded as an overloaded server
    # might: its tool call arrives as unparsed, cut-off text and finish_reason is "length".
    degrade_above: int | None = None
    # With degrade_above: the first time more than degrade_above agent sessions are open (or
    # requests in flight) together, every reply from then on is degraded (module docstring).
    stays_degraded: bool = False
    # Per-session script choice (see the module docstring): (prefix, k, in_flight) -> prefix.
    rescript: Callable[[str, int, int], str] | None = None
    # Tool-call integrity faults under load: replies with a call that were in flight together
    # with more than `integrity_above` requests are broken the way the class `integrity` names.
    integrity: str | None = None
    integrity_above: int = 0
    integrity_rate: float = 1.0
    seed: int = 0
    # An outage by session: positions, in order of first arrival, of the sessions whose every
    # request gets a 503 (see the module docstring).
    down_sessions: frozenset[int] = frozenset()

    def __post_init__(self) -> None:
        if self.integrity is not None and self.integrity not in FAULTS:
            raise ValueError(f"unknown integrity fault {self.integrity!r}")

    @property
    def judged(self) -> bool:
        """Replies are buffered whole and judged by the load they met."""
        return self.degrade_above is not None or self.integrity is not None

    @classmethod
    def seeded(cls, seed: int, n: int, faults: list[Fault], rate: float = 0.3,
               stall_s: float = 30.0) -> FaultSchedule:
        """A reproducible random schedule: each of `n` requests faults with probability `rate`."""
        rng = random.Random(seed)
        picks: list[Fault] = [rng.choice(faults) if rng.random() < rate else "pass"
                              for _ in range(n)]
        return cls(picks, stall_s)

    def fault_for(self, index: int) -> Fault:
        return self.faults[index] if index < len(self.faults) else "pass"


class FaultProxy:
    def __init__(self, upstream: str, schedule: FaultSchedule) -> None:
        self.upstream = upstream.rstrip("/")
        if self.upstream.endswith("/v1"):
            self.upstream = self.upstream[: -len("/v1")]
        self.schedule = schedule
        self.seen: list[Fault] = []
        self.requests: list[tuple[dict[str, str], bytes]] = []  # (headers, body) per POST
        self._open: list[list[int]] = []  # per request in flight: the most seen with it
        self.degraded = 0
        self.overloaded_at: int | None = None  # stays_degraded: the request that broke it
        self._sessions_open: set[str] = set()  # stays_degraded: first request seen, not final
        self.corrupted = 0
        self.rescripted = 0
        self._rng = random.Random(schedule.seed)
        self._scripts: dict[str, str] = {}  # session -> chosen prefix
        self._sessions_seen: dict[str, int] = {}  # prefix -> sessions so far
        self._session_order: dict[str, int] = {}  # session -> position of its first request
        self.downed: list[str] = []  # sessions the outage took, in order
        self._runner: web.AppRunner | None = None
        self._session: ClientSession | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def __aenter__(self) -> FaultProxy:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._session = ClientSession(timeout=ClientTimeout(total=None, sock_read=120))
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        fault: Fault = "pass"
        if request.method == "POST":
            fault = ("http_503" if self._session_down(request)
                     else self.schedule.fault_for(len(self.seen)))
            self.seen.append(fault)
            self.requests.append(({k.lower(): v for k, v in request.headers.items()}, body))
        if fault.startswith("http_"):
            code = int(fault.split("_")[1])
            message = f"injected {code}"
            if self.schedule.echo_auth_in_errors:
                message += f" (request had Authorization: {request.headers.get('Authorization')})"
            payload = {"error": {"message": message, "type": "injected", "code": code}}
            return web.json_response(payload, status=code)
        if fault == "drop_before_first_byte":
            _abort(request)
            raise asyncio.CancelledError  # aiohttp drops the connection without a response
        if fault == "stall":
            await asyncio.sleep(self.schedule.stall_s)
        if request.method == "POST" and self.schedule.rescript is not None:
            body = self._rescript(request, body)
        if request.method != "POST" or (not self.schedule.judged
                                         and self.schedule.rescript is None):
            return await self._forward(request, body, fault)
        peak = [0]
        self._open.append(peak)
        for other in self._open:
            other[0] = max(other[0], len(self._open))
        if self.schedule.stays_degraded:
            self._note_load(request)
        try:
            return await self._forward(request, body, fault,
                                       peak if self.schedule.judged else None)
        finally:  # by identity: another request's peak may be an equal list
            self._open[:] = [p for p in self._open if p is not peak]

    def _note_load(self, request: web.Request) -> None:
        """Sessions open and requests in flight as this request arrives (it is counted among
        the latter): the first time either is above degrade_above, the server breaks."""
        session = request.headers.get("x-dynamo-session-id")
        if session is not None:
            if request.headers.get("x-dynamo-session-final", "").lower() == "true":
                self._sessions_open.discard(session)
            else:
                self._sessions_open.add(session)
        limit = self.schedule.degrade_above
        load = max(len(self._sessions_open), len(self._open))
        if limit is not None and self.overloaded_at is None and load > limit:
            self.overloaded_at = len(self.seen) - 1

    def _session_down(self, request: web.Request) -> bool:
        session = request.headers.get("x-dynamo-session-id")
        if session is None:
            return False
        if session not in self._session_order:
            self._session_order[session] = len(self._session_order)
            if self._session_order[session] in self.schedule.down_sessions:
                self.downed.append(session)
        return self._session_order[session] in self.schedule.down_sessions

    def _rescript(self, request: web.Request, body: bytes) -> bytes:
        session = request.headers.get("x-dynamo-session-id")
        try:
            payload = json.loads(body)
            notes = payload["nvext"]["annotations"]
        except (ValueError, KeyError, TypeError):
            return body
        for i, note in enumerate(notes):
            key, _, rest = note.partition(":")
            prefix, _, index = rest.rpartition(":")
            if key != "output_replay_id" or not prefix or session is None:
                continue
            if session not in self._scripts:
                k = self._sessions_seen.get(prefix, 0)
                self._sessions_seen[prefix] = k + 1
                chosen = self.schedule.rescript(prefix, k, len(self._open) + 1)
                self._scripts[session] = chosen
                self.rescripted += chosen != prefix
            notes[i] = f"output_replay_id:{self._scripts[session]}:{index}"
        return json.dumps(payload).encode()

    async def _forward(self, request: web.Request, body: bytes, fault: Fault,
                       peak: list[int] | None = None):
        assert self._session is not None
        if self._session.closed:
            # The proxy is shutting down while a stalled request wakes up: no upstream to ask.
            return web.json_response({"error": {"message": "fault proxy closed"}}, status=503)
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_HEADERS}
        url = self.upstream + request.rel_url.path_qs
        async with self._session.request(request.method, url, data=body,
                                         headers=headers) as upstream:
            out_headers = {k: v for k, v in upstream.headers.items()
                           if k.lower() not in _HOP_HEADERS | {"content-encoding"}}
            response = web.StreamResponse(status=upstream.status, headers=out_headers)
            try:
                if peak is not None:
                    await self._relay_judged(request, response, upstream, peak, body)
                else:
                    await self._relay(request, response, upstream, fault)
            except (ConnectionResetError, RuntimeError):
                # The client hung up (its timeout, its cancel): aiohttp raises
                # ClientConnectionResetError (older versions RuntimeError) on the next write to
                # the closed transport. That is the client's choice, not a proxy fault, so stop
                # quietly; anything else, or the same error with the client still there, is real.
                if not _client_gone(request):
                    raise
            return response

    async def _relay(self, request: web.Request, response: web.StreamResponse,
                     upstream: ClientResponse, fault: Fault) -> None:
        await response.prepare(request)
        events = 0
        buffer = b""
        async for piece in upstream.content.iter_any():
            buffer += piece
            # Forward whole SSE events so faults land between events, as a real break would.
            while b"\n\n" in buffer:
                event, buffer = buffer.split(b"\n\n", 1)
                events += 1
                if fault == "drop_mid_stream" and events == 3:
                    _abort(request)
                    return
                if fault == "malformed_sse" and events == 2:
                    await response.write(b'data: {"choices": [ this is not json\n\n')
                    await response.write_eof()
                    return
                await response.write(event + b"\n\n")
        if buffer:
            await response.write(buffer)
        await response.write_eof()


    async def _relay_judged(self, request: web.Request, response: web.StreamResponse,
                            upstream: ClientResponse, peak: list[int], sent: bytes) -> None:
        """The whole reply first (the load it met is known only at its end), then either as it
        came, degraded, or with its tool calls broken."""
        body = await upstream.read()
        schedule = self.schedule
        limit = schedule.degrade_above
        if (limit is not None and (peak[0] > limit or self.overloaded_at is not None)
                and upstream.status == 200):
            self.degraded += 1
            body = _degrade(body)
        if (schedule.integrity is not None and peak[0] > schedule.integrity_above
                and upstream.status == 200 and self._rng.random() < schedule.integrity_rate):
            broken = corrupt(body, schedule.integrity, _tools(sent))
            if broken is not None:
                self.corrupted += 1
                body = broken
        await response.prepare(request)
        await response.write(body)
        await response.write_eof()


def _tools(request_body: bytes) -> list | None:
    try:
        tools = json.loads(request_body).get("tools")
    except (ValueError, AttributeError):
        return None
    return tools if isinstance(tools, list) else None


def _degrade(body: bytes) -> bytes:
    """SSE chat chunks with every tool-call delta replaced by the start of the call as plain
    text (cut off, so no parser can salvage it) and the finish reason set to "length"."""
    out = []
    started = False
    for event in body.split(b"\n\n"):
        if not event.startswith(b"data: {"):
            out.append(event)
            continue
        chunk = json.loads(event[len(b"data: "):])
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            calls = delta.pop("tool_calls", None)
            if calls and not started:
                name = (calls[0].get("function") or {}).get("name", "")
                delta["content"] = f'<tool_call>{{"name": "{name}", "argu'
                started = True
            if choice.get("finish_reason"):
                choice["finish_reason"] = "length"
        out.append(b"data: " + json.dumps(chunk).encode())
    return b"\n\n".join(out)


@contextmanager
def in_thread(upstream: str, schedule: FaultSchedule) -> Iterator[FaultProxy]:
    """The proxy on its own event loop in a background thread, for callers that are not
    async themselves (a subprocess under test talks to `proxy.base_url`)."""
    loop = asyncio.new_event_loop()
    proxy = FaultProxy(upstream, schedule)
    ready, stop = threading.Event(), asyncio.Event()

    async def serve() -> None:
        async with proxy:
            ready.set()
            await stop.wait()

    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),), daemon=True)
    thread.start()
    if not ready.wait(30):
        raise RuntimeError("fault proxy did not start in 30 s")
    try:
        yield proxy
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(30)


def _client_gone(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


def _abort(request: web.Request) -> None:
    transport = request.transport
    if transport is not None:
        transport.abort()
