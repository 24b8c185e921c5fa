"""An API key never reaches disk or output: a sweep (with its Harbor jobs, logs, manifest and
report) and a separate report run, with a unique key in the variable the agent reads, are
searched byte for byte for it. The sweep runs against the real Dynamo frontend + mocker behind
the fault-injecting test proxy, whose error bodies quote the Authorization header back, so the
key is offered to every error path too."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.built_tasks import CHEAP_LABELS
from tests.support.cli import bankbench, bankbench_here
from tests.support.fault_proxy import FaultProxy, FaultSchedule

pytestmark = [pytest.mark.dynamo, pytest.mark.harbor, pytest.mark.slow]

KEY_ENV = "BANKBENCH_RELIABILITY_KEY"


class ProxyThread:
    """Runs the async FaultProxy on its own event loop so a subprocess can use it."""

    def __init__(self, upstream: str, schedule: FaultSchedule) -> None:
        self.upstream, self.schedule = upstream, schedule
        self.ready = threading.Event()
        self.stop: asyncio.Event | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.base_url = ""
        self.seen: list[str] = []
        self.auth: list[str | None] = []  # Authorization header of each POST, held in memory
        self.thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)

    async def _main(self) -> None:
        self.loop, self.stop = asyncio.get_running_loop(), asyncio.Event()
        async with FaultProxy(self.upstream, self.schedule) as proxy:
            self.base_url = proxy.base_url
            self.ready.set()
            await self.stop.wait()
            self.seen = list(proxy.seen)
            self.auth = [headers.get("authorization") for headers, _ in proxy.requests]

    def __enter__(self) -> ProxyThread:
        self.thread.start()
        assert self.ready.wait(30), "proxy did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.loop is not None and self.stop is not None
        self.loop.call_soon_threadsafe(self.stop.set)
        self.thread.join(30)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    from bankbench.serve import api

    state = api.up("cpu-mocker", state_dir=tmp_path_factory.mktemp("secret-stack"),
                   options={"speedup_ratio": 10})
    try:
        yield state
    finally:
        api.down(state)


def _holders(root: Path, needle: bytes) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


def test_key_is_absent_from_sweep_job_logs_and_report(stack, tmp_path):
    key = "sk-reliability-" + os.urandom(16).hex()
    # Every other request fails with a body quoting the Authorization header.
    schedule = FaultSchedule(["http_500", "pass"] * 20, echo_auth_in_errors=True)
    with ProxyThread(stack.base_url, schedule) as proxy:
        sweep = bankbench(
            "sweep", "--base-url", proxy.base_url, "--model", stack.model, "--levels", "1",
            "--source", "sample", "--labels", CHEAP_LABELS, "--limit", "2",
            "--ak", f"api_key_env={KEY_ENV}",
            "--out", str(tmp_path), "--name", "s", env={KEY_ENV: key}, timeout=600,
        )
    assert sweep.returncode == 0, sweep.stdout[-2000:] + sweep.stderr[-2000:]
    assert "http_500" in proxy.seen  # the echoing error path was exercised
    sweep_dir = tmp_path / "s"
    assert (sweep_dir / "report.md").exists() and (sweep_dir / "logs").is_dir()
    # a sweep draws its report's figures unless told not to (--no-plots), and they are
    # searched for the key with every other file below
    assert list((sweep_dir / "plots").glob("*.png"))
    assert list(sweep_dir.glob("logs/*.harbor.log"))
    # the figures of the same trials were drawn (and searched) in the sweep's own report
    report = bankbench("report", str(sweep_dir / "c1"), "--out", str(tmp_path / "r1"),
                       "--no-plots", env={KEY_ENV: key})
    assert report.returncode == 0, report.stderr

    needle = key.encode()
    assert _holders(tmp_path, needle) == []
    for done in (sweep, report):
        assert key not in done.stdout and key not in done.stderr
    # the server side kept no copy either (its logs live in the stack's state dir)
    assert stack.state_dir is None or _holders(stack.state_dir, needle) == []
    # and the key did travel: the agent sent it, and the error bodies quoted it back
    assert proxy.auth and set(proxy.auth) == {f"Bearer {key}"}


def test_sweep_refuses_a_model_the_server_does_not_serve(stack, tmp_path):
    # (here for the live server this module already runs; the other URL doors are in
    # test_doors.py). In this process: what the refusal says and returns is the command's.
    done = bankbench_here("sweep", "--base-url", stack.base_url, "--model", "no-such-model",
                          "--levels", "1", "--out", str(tmp_path), "--name", "s")
    assert done.returncode == 1
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "'no-such-model' is not served" in lines[0]
    assert stack.model in lines[0] and "no trial was run" in lines[0]
    assert not (tmp_path / "s").exists()
