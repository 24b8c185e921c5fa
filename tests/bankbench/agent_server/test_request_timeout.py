"""An episode past the server's request timeout is stopped: 504 on /invoke, an error chunk on a
stream, its status saying so, and the slot free again (the app in-process under uvicorn)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
import uvicorn

from agents.options import parse_options
from bankbench.agent_server.app import create_app
from bankbench.agent_server.models import ServerConfig
from tests.support.agent_server_stack import KEY_ENV, PREFIX, SECRET, Served, free_port

pytestmark = [pytest.mark.dynamo, pytest.mark.slow, pytest.mark.timeout(300)]

LIMIT_S = 0.3


@pytest.fixture
def short_server(served: Served, tmp_path, monkeypatch) -> Iterator[tuple[str, ServerConfig]]:
    monkeypatch.setenv(KEY_ENV, SECRET)
    options = parse_options({
        "base_url": served.base_url, "api_key_env": KEY_ENV,
        "nvext_annotations": f"output_replay_id:{PREFIX}{{scenario_id}}:{{request_index}}"})
    config = ServerConfig(tasks_dir=served.tasks, out_dir=tmp_path / "runs", agent=options,
                          model=served.model, max_concurrency=1, request_timeout_s=LIMIT_S)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(config), host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "server did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}", config
    finally:
        server.should_exit = True
        thread.join(timeout=20)


def test_timeout_stops_the_episode_and_frees_the_slot(served: Served, short_server):
    url, config = short_server
    slow = served.scenarios[2]
    r = httpx.post(f"{url}/invoke", json={"scenario": slow}, timeout=60)
    assert r.status_code == 504 and r.json()["error"] == "timeout"
    runs = list(config.out_dir.iterdir())
    assert len(runs) == 1
    status = json.loads((runs[0] / "agent" / "agent_status.json").read_text())
    assert status["reason"].startswith(f"request timeout ({LIMIT_S:g} s) while "), status

    # The one slot is free again; a stream over the limit ends with an error chunk.
    with httpx.stream("POST", f"{url}/generate/full", json={"input_message": slow},
                      timeout=60) as s:
        assert s.status_code == 200
        last = [line for line in s.iter_lines() if line.startswith("data: ")][-1]
    final = json.loads(last.removeprefix("data: "))
    assert final["value"] == "" and final["error"]["code"] == "timeout"
    assert httpx.get(f"{url}/health", timeout=5).json()["active"] == 0
