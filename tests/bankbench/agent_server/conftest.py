"""One real stack for the agent-server tests: the Dynamo frontend + mocker (replay-scripted)
and `bankbench agent-server` itself as a subprocess on a free port, reached with httpx."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator

import httpx
import pytest

from bankbench.serve.replay import oracle_calls as task_calls
from bankbench.serve.replay import tool_call_text as tc
from tests.support.agent_server_stack import (
    KEY_ENV,
    LONG_TURNS,
    MAX_CONCURRENCY,
    PREFIX,
    SECRET,
    Served,
    free_port,
)


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    from bankbench import procs
    from bankbench.serve import api, replay
    from tests.support.built_tasks import build_sample

    root = tmp_path_factory.mktemp("agent-server")
    tasks = build_sample(root / "tasks", limit=3)
    scenarios = sorted(p.name for p in tasks.iterdir() if p.is_dir())
    first, second, slow = scenarios[:3]
    calls = {sid: task_calls(tasks / sid) for sid in scenarios}
    answers = {first: "All done for you.", second: "Handled, in two turns.",
               slow: "That took a while."}
    slow_call = calls[slow][0]
    sessions = {
        # all calls in one turn, then the answer
        PREFIX + first: ["\n".join(tc(*c) for c in calls[first]), answers[first]],
        # one call per turn
        PREFIX + second: [*(tc(*c) for c in calls[second]), answers[second]],
        PREFIX + slow: [*(tc(*slow_call) for _ in range(LONG_TURNS)), answers[slow]],
    }
    trace = replay.write_trace(root / "trace.jsonl", sessions)
    out, tmp = root / "runs", root / "server-tmp"
    tmp.mkdir()
    log = root / "agent-server.log"
    with api.running("cpu-mocker", workers=1, state_dir=root / "state",
                     options={"speedup_ratio": 1.0, "replay_trace": str(trace)}) as stack:
        port = free_port()
        env = {**os.environ, KEY_ENV: SECRET, "TMPDIR": str(tmp)}
        cmd = [sys.executable, "-m", "bankbench", "agent-server", "--tasks", str(tasks),
               "-m", stack.model, "--port", str(port), "--out", str(out),
               "--max-concurrency", str(MAX_CONCURRENCY),
               "--ak", f"base_url={stack.base_url}", "--ak", f"api_key_env={KEY_ENV}",
               "--ak", f"nvext_annotations=output_replay_id:{PREFIX}{{scenario_id}}:"
                       "{request_index}"]
        proc = procs.spawn(cmd, log, env=env)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while True:
                assert proc.poll() is None, log.read_text()[-3000:]
                try:
                    if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, "agent-server did not answer in 60 s"
                time.sleep(0.2)
            yield Served(url, out, tmp, scenarios, calls, answers, log, tasks, stack.base_url,
                         stack.model)
        finally:
            procs.stop_group(proc.pid)
