"""The HTTP side of the client: one httpx client per trial, and three transport details that
keep the client's clock honest and cheap.

- The send-time hook stamps a request when httpx hands it to the transport, so TTFT and E2E
  count from there (see `stamp_send`).
- TCP_QUICKACK on each response head, so a server that leaves Nagle on cannot hold the first
  token back for a delayed ACK (see `ack_now`).
- One TLS context per process: building one reads the CA bundle (~30 ms of CPU), and every
  trial has its own client.

httpx is the project's one HTTP stack: Harbor already depends on it and the serve, sweep and
benchmark code use it; the agent posts plain JSON and reads the SSE body itself, so an SDK on
top adds nothing it uses.
"""

from __future__ import annotations

import contextvars
import functools
import socket
import ssl
import time
from dataclasses import dataclass
from typing import Any

import httpx


@dataclass
class SendStamp:
    """Clocks of one try, set as its request goes to the transport."""

    send_ns: int
    start_unix_ns: int
    sent: bool = False  # the hook fired: the request reached the transport

    @classmethod
    def now(cls) -> SendStamp:
        return cls(time.perf_counter_ns(), time.time_ns())


# The try whose request httpx is about to send, per task: lets the client's request hook
# stamp that try's send (each asyncio task has its own context).
SENDING: contextvars.ContextVar[SendStamp | None] = contextvars.ContextVar(
    "bankbench_sending", default=None)


async def stamp_send(request: httpx.Request) -> None:
    """Start the try's clocks as the request is handed to the transport.

    TTFT and E2E run from here rather than from the call to `chat`: what came before is the
    harness's own work (JSON-encoding the history and tool schemas, building the request) and,
    with many trials on one event loop, waiting for that loop; neither is the server's
    latency, and a load generator with its own process per user would not pay it. From here
    on everything a real client waits for is counted: the pool handing out (or opening) a
    connection, writing the request, the server, and reading the answer.
    """
    stamp = SENDING.get()
    if stamp is not None:
        stamp.send_ns = time.perf_counter_ns()
        stamp.start_unix_ns = time.time_ns()
        stamp.sent = True


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    # Only read once built, so every client of the process can share it.
    return httpx.create_ssl_context()


# httpx keeps only 20 idle connections by default: a client shared by many concurrent
# requests (the check, the benchmarks) would then reconnect for most of them, and connecting
# counts in TTFT. These are the OpenAI SDK's limits, which the agent used before.
LIMITS = httpx.Limits(max_connections=1000, max_keepalive_connections=100)


def http_client(base_url: str, api_key: str, timeout_s: float) -> httpx.AsyncClient:
    """A client for one trial: bearer auth, the send-time hook, the shared TLS context."""
    return httpx.AsyncClient(
        base_url=base_url.rstrip("/") + "/",
        headers={"Authorization": f"Bearer {api_key}", "Accept": "application/json"},
        timeout=httpx.Timeout(timeout_s),
        limits=LIMITS,
        follow_redirects=True,
        verify=_ssl_context(),
        event_hooks={"request": [stamp_send]},
    )


def ack_now(response: Any) -> None:
    """Send the ACK for the response head now instead of up to 40 ms later.

    Dynamo 1.6.1's HTTP frontend does not set TCP_NODELAY, so Nagle keeps its first SSE chunk
    in the kernel until the client acknowledges the head. On a reused (keep-alive) connection
    Linux delays that ACK (40 ms minimum), which pinned the first token to about head + 40 ms
    while the server's own TTFT said 18 ms. TCP_QUICKACK flushes the pending ACK; it is a
    no-op where the option or the socket is not available (other OSes, test transports).
    """
    quickack = getattr(socket, "TCP_QUICKACK", None)
    stream = (getattr(response, "extensions", None) or {}).get("network_stream")
    if quickack is None or stream is None:
        return
    sock = stream.get_extra_info("socket")
    if sock is None:
        return
    try:
        sock.setsockopt(socket.IPPROTO_TCP, quickack, 1)
    except OSError:
        pass  # not a TCP socket (a unix socket or a proxy stream): nothing to hurry
