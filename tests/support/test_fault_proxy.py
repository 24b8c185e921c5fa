"""The fault proxy itself: a client that hangs up is not an error of the proxy."""

import asyncio
import logging

import pytest
from aiohttp import ClientSession, ClientTimeout, web

from tests.support.fault_proxy import FaultProxy, FaultSchedule


async def _slow_sse(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    try:
        for i in range(20):
            await response.write(f"data: {i}\n\n".encode())
            await asyncio.sleep(0.02)
        await response.write_eof()
    except ConnectionResetError:
        pass  # the proxy let go of a stream its client left; only the proxy is under test
    return response


async def _start_upstream(handler=_slow_sse) -> tuple[web.AppRunner, int]:
    app = web.Application()
    app.router.add_post("/v1/chat/completions", handler)
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]


def _errors(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


async def test_client_hanging_up_mid_stream_logs_nothing(caplog):
    caplog.set_level(logging.DEBUG)
    runner, port = await _start_upstream()
    try:
        async with FaultProxy(f"http://127.0.0.1:{port}", FaultSchedule()) as proxy:
            async with ClientSession() as client:
                async with client.post(f"{proxy.base_url}/chat/completions", json={}) as resp:
                    assert await resp.content.readuntil(b"\n\n") == b"data: 0\n\n"
                # Leaving the block closes the connection with 19 events still to come.
            await asyncio.sleep(0.5)  # the proxy's next writes hit the closed transport
    finally:
        await runner.cleanup()
    assert _errors(caplog) == []


async def test_client_timing_out_on_a_stall_logs_nothing(caplog):
    caplog.set_level(logging.DEBUG)
    runner, port = await _start_upstream()
    try:
        schedule = FaultSchedule(["stall"], stall_s=0.3)
        async with FaultProxy(f"http://127.0.0.1:{port}", schedule) as proxy:
            async with ClientSession(timeout=ClientTimeout(total=0.1)) as client:
                try:
                    async with client.post(f"{proxy.base_url}/chat/completions", json={}):
                        raise AssertionError("the stall should outlast the client's timeout")
                except TimeoutError:
                    pass
            await asyncio.sleep(0.6)  # the stall ends and the proxy answers a gone client
    finally:
        await runner.cleanup()
    assert proxy.seen == ["stall"]
    assert _errors(caplog) == []


async def _reply_with_a_call(request: web.Request) -> web.StreamResponse:
    from tests.support.tool_call_faults import frontend_reply

    await asyncio.sleep(0.3)  # long enough for requests sent together to overlap
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    await response.write(frontend_reply([("get_account_balance", {"account_number": "1"})]))
    await response.write_eof()
    return response


async def test_integrity_faults_hit_only_replies_in_flight_above_the_limit():
    runner, port = await _start_upstream(_reply_with_a_call)
    schedule = FaultSchedule(integrity="unknown_tool", integrity_above=1)
    try:
        async with FaultProxy(f"http://127.0.0.1:{port}", schedule) as proxy, \
                ClientSession() as client:
            async def ask() -> bytes:
                async with client.post(f"{proxy.base_url}/chat/completions", json={}) as resp:
                    return await resp.read()

            alone = await ask()
            together = await asyncio.gather(ask(), ask(), ask())
    finally:
        await runner.cleanup()
    assert b'"get_account_balance"' in alone
    assert all(b'"get_account_balance_v2"' in body for body in together)
    assert proxy.corrupted == 3


def _held(release: dict[str, asyncio.Event]):
    """An upstream that answers the request named `name` with a tool call once its event is
    set."""
    from tests.support.tool_call_faults import frontend_reply

    async def held(request: web.Request) -> web.StreamResponse:
        await release[(await request.json())["name"]].wait()
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(frontend_reply([("get_account_balance", {"account_number": "1"})]))
        await response.write_eof()
        return response

    return held


async def test_requests_ending_out_of_order_keep_their_own_counts():
    """A and B in flight; B ends; C and D join; A ends, then C and D. Each request counts the
    most requests it was in flight with (B 2, the others 3), whichever ended first, and none
    fails: B's end must not take A's count for its own."""
    release = {name: asyncio.Event() for name in "ABCD"}
    runner, port = await _start_upstream(_held(release))
    schedule = FaultSchedule(integrity="unknown_tool", integrity_above=2)
    try:
        async with FaultProxy(f"http://127.0.0.1:{port}", schedule) as proxy, \
                ClientSession() as client:
            async def ask(name: str) -> tuple[int, bytes]:
                async with client.post(f"{proxy.base_url}/chat/completions",
                                       json={"name": name}) as resp:
                    return resp.status, await resp.read()

            async def start(name: str, in_flight: int) -> asyncio.Task:
                task = asyncio.create_task(ask(name))
                while len(proxy._open) < in_flight:  # the proxy has counted it
                    await asyncio.sleep(0.01)
                return task

            tasks = {"A": await start("A", 1), "B": await start("B", 2)}
            release["B"].set()
            await tasks["B"]
            tasks["C"] = await start("C", 2)
            tasks["D"] = await start("D", 3)
            for name in "ACD":
                release[name].set()
                await tasks[name]
    finally:
        await runner.cleanup()
    replies = {name: task.result() for name, task in tasks.items()}
    assert {name: status for name, (status, _) in replies.items()} == dict.fromkeys("ABCD", 200)
    broken = {name for name, (_, body) in replies.items() if b'"get_account_balance_v2"' in body}
    assert broken == {"A", "C", "D"} and proxy.corrupted == 3


@pytest.mark.parametrize("stays", [False, True])
async def test_degraded_above_a_load_and_after_it_when_the_overload_stays(stays):
    """A alone; B, C and D together (above 2, from D's arrival); E alone after them. B, C and
    D get degraded replies, A never; E too only when the overload stays, its own load (1)
    whatever."""
    release = {name: asyncio.Event() for name in "ABCDE"}
    runner, port = await _start_upstream(_held(release))
    schedule = FaultSchedule(degrade_above=2, stays_degraded=stays)
    try:
        async with FaultProxy(f"http://127.0.0.1:{port}", schedule) as proxy, \
                ClientSession() as client:
            async def ask(name: str) -> bytes:
                async with client.post(f"{proxy.base_url}/chat/completions",
                                       json={"name": name}) as resp:
                    assert resp.status == 200
                    return await resp.read()

            async def start(name: str, in_flight: int) -> asyncio.Task:
                task = asyncio.create_task(ask(name))
                while len(proxy._open) < in_flight:  # the proxy has counted it
                    await asyncio.sleep(0.01)
                return task

            tasks = {"A": await start("A", 1)}
            release["A"].set()
            await tasks["A"]
            assert proxy.overloaded_at is None
            tasks |= {"B": await start("B", 1), "C": await start("C", 2)}
            assert proxy.overloaded_at is None  # two in flight: not above 2
            tasks["D"] = await start("D", 3)
            for name in "BCD":
                release[name].set()
                await tasks[name]
            tasks["E"] = await start("E", 1)
            release["E"].set()
            await tasks["E"]
    finally:
        await runner.cleanup()
    degraded = {name for name, task in tasks.items()
                if b"<tool_call>" in task.result() and b'"tool_calls"' not in task.result()}
    assert degraded == ({"B", "C", "D", "E"} if stays else {"B", "C", "D"})
    assert proxy.degraded == len(degraded)
    assert proxy.overloaded_at == (3 if stays else None)  # D, the fourth request


async def test_sessions_open_together_above_the_load_break_it_for_good():
    """Requests one at a time: sessions a and b open, a closes (its final request), c opens:
    two open, nothing degraded. d opens: three, though no two requests ever overlapped — d's
    reply and every later one are degraded."""
    from tests.support.tool_call_faults import frontend_reply

    async def call(request: web.Request) -> web.Response:
        return web.Response(body=frontend_reply([("get_account_balance", {})]),
                            content_type="text/event-stream")

    runner, port = await _start_upstream(call)
    schedule = FaultSchedule(degrade_above=2, stays_degraded=True)
    sent = [("a", ""), ("b", ""), ("a", "true"), ("c", ""), ("d", ""), ("b", "")]
    try:
        async with FaultProxy(f"http://127.0.0.1:{port}", schedule) as proxy, \
                ClientSession() as client:
            replies = []
            for session, final in sent:
                headers = {"x-dynamo-session-id": session}
                if final:
                    headers["x-dynamo-session-final"] = final
                async with client.post(f"{proxy.base_url}/chat/completions", json={},
                                       headers=headers) as resp:
                    replies.append(await resp.read())
    finally:
        await runner.cleanup()
    degraded = [b"<tool_call>" in body and b'"tool_calls"' not in body for body in replies]
    assert degraded == [False, False, False, False, True, True]
    assert proxy.overloaded_at == 4 and proxy.degraded == 2


async def test_a_session_outage_fails_every_request_of_the_chosen_sessions():
    """Sessions are numbered by the arrival of their first request; every request of a downed
    one gets a 503 (retries included), others pass, and requests without a session pass."""
    async def ok(request: web.Request) -> web.Response:
        return web.json_response({})

    runner, port = await _start_upstream(ok)
    try:
        async with FaultProxy(f"http://127.0.0.1:{port}",
                              FaultSchedule(down_sessions=frozenset({1}))) as proxy, \
                ClientSession() as client:
            async def ask(session: str | None) -> int:
                headers = {"x-dynamo-session-id": session} if session else {}
                async with client.post(f"{proxy.base_url}/chat/completions", json={},
                                       headers=headers) as resp:
                    return resp.status

            statuses = [await ask(s) for s in ("a", "b", None, "b", "c", "a", "b")]
    finally:
        await runner.cleanup()
    assert statuses == [200, 503, 200, 503, 200, 200, 503]
    assert proxy.downed == ["b"]
    assert proxy.seen.count("http_503") == 3
