"""A level's two shards as Ray tasks on a real Ray cluster, each a stand-in command (`sleep`) in
place of Harbor, and a server watch that reports the server gone after its first answer. The Ray
executor must stop both shards' processes and raise JobAborted, as the local executor does. Run
inside the loopback-only namespace by ray_netns.py, on the cluster its sweep ran on."""

from __future__ import annotations

import time
from pathlib import Path

from bankbench.sweep import executors, harbor_job, shards
from bankbench.sweep.ray_shards import run_ray
from contracts.sweep import SweepConfig
from tests.support.built_tasks import empty_tasks
from tests.support.shard_standins import (
    READY_MARK,
    SIGINT_MARK,
    stand_in_launches,
    stopped,
)


def stop_on_dead_server(out: Path, address: str) -> dict:
    """What the stop did: the message raised, the shards' pids, whether they are gone, how
    long the level ran and how long its stop took (from the watch's report to the raise)."""
    import ray

    config = SweepConfig(base_url="http://127.0.0.1:1/v1", model="m", shards=2, ray=address)
    empty_tasks(out, 2)
    launches = stand_in_launches(config, out, 2, seconds=240)
    # The server "dies" once both shards' processes run (Ray may take a while to start a
    # worker on a loaded machine), so the check is that every running shard is stopped.
    both_running = time.monotonic() + 120
    gone_at: list[float] = []

    def watch() -> str | None:
        pids = [(shards.read_record(ln.shard.job) or ln.shard.record).pid for ln in launches]
        ready = [(ln.shard.job / READY_MARK).exists() for ln in launches]
        if all(pids) and all(ready) or time.monotonic() > both_running:
            gone_at.append(time.monotonic())
            return "the server at 127.0.0.1:1 stopped answering"
        return None

    pacer = executors.Pacer(watch, None, watch_every_s=0.5)
    t0, raised = time.monotonic(), None
    try:
        run_ray(launches, pacer, address=address, poll_s=0.2)
    except harbor_job.JobAborted as exc:
        raised = str(exc)
    end = time.monotonic()
    seconds, stop_seconds = end - t0, end - gone_at[0] if gone_at else None
    pids = [shards.read_record(ln.shard.job).pid for ln in launches]
    ray.shutdown()
    return {"raised": raised, "pids": pids, "stopped": stopped(pids), "seconds": seconds,
            "stop_seconds": stop_seconds,
            "sigint": [(ln.shard.job / SIGINT_MARK).exists() for ln in launches],
            "sigint_ignored": [(ln.shard.job / READY_MARK).read_text() == "SIGINT ignored"
                               for ln in launches]}
