"""Helpers of the router tests: requests with the agent's headers, which worker process
an instance is, and waiting for the router's and the frontend's records."""

import json
import time

import httpx
import psutil

from bankbench import procs


def chat(state, request_id, session, content, max_tokens=8, osl=None, timeout=60):
    """One chat completion through the stack's frontend, with the agent's headers."""
    body = {"model": state.model, "messages": [{"role": "user", "content": content}],
            "max_tokens": max_tokens}
    if osl is not None:
        body["nvext"] = {"agent_hints": {"osl": osl}}
    return httpx.post(f"{state.base_url}/chat/completions", json=body, timeout=timeout,
                      headers={"x-request-id": request_id, "x-dynamo-session-id": session})


def worker_ports(state) -> dict[int, str]:
    """Listening TCP port → component name, for the stack's worker processes (the router logs
    each chosen instance's address, whose port tells which process it is)."""
    out = {}
    for comp in state.components:
        if not comp.name.startswith("worker-"):
            continue
        for proc in procs.group_members(comp.pid):
            try:
                for conn in proc.net_connections(kind="tcp"):
                    if conn.status == psutil.CONN_LISTEN:
                        out[conn.laddr.port] = comp.name
            except psutil.Error:
                continue
    return out


def component_of(address: str | None, ports: dict[int, str]) -> str | None:
    if not address:
        return None
    return ports.get(int(address.split("/")[0].rsplit(":", 1)[1]))


def wait_for_decisions(state, n, timeout=10.0) -> list[dict]:
    deadline = time.monotonic() + timeout
    while True:
        rows = [json.loads(x) for p in sorted((state.state_dir / "router").glob("decisions-*"))
                for x in p.read_text().splitlines()]
        if len(rows) >= n or time.monotonic() > deadline:
            return rows
        time.sleep(0.1)


def wait_joined(state, request_ids, timeout=20.0):
    """The decisions joined to client ids, once the frontend's trace (flushed in batches)
    has every one of `request_ids`."""
    from analysis.router_decisions import read_decisions

    deadline = time.monotonic() + timeout
    while True:
        joined = read_decisions(state.state_dir)
        have = set(joined["request_id"].dropna()) if not joined.empty else set()
        if set(request_ids) <= have or time.monotonic() > deadline:
            return joined
        time.sleep(0.3)
