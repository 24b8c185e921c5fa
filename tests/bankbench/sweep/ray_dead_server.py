"""Run inside a private network namespace (loopback only) by test_shards_ray.py: a level's two
shards as Ray tasks on a real local Ray cluster, each a stand-in command (`sleep`) in place of
Harbor, and a server watch that reports the server gone after its first answer. The Ray
executor must stop both shards' processes and raise JobAborted, as the local executor does.

    python -m tests.bankbench.sweep.ray_dead_server OUT_DIR       # writes OUT_DIR/ray.json
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from bankbench.sweep import executors, harbor_job, shards
from bankbench.sweep.ray_shards import run_ray
from contracts.sweep import SweepConfig
from tests.support.built_tasks import empty_tasks
from tests.support.shard_standins import stand_in_launches, stopped


def main(out: Path) -> int:
    import ray

    for tries_left in (2, 1, 0):  # a loaded machine can miss Ray's start-up deadline
        try:
            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                     object_store_memory=80 * 1024 * 1024)
            break
        except Exception:
            ray.shutdown()
            if not tries_left:
                raise
    config = SweepConfig(base_url="http://127.0.0.1:1/v1", model="m", shards=2, ray="auto")
    empty_tasks(out, 2)
    launches = stand_in_launches(config, out, 2, seconds=240)
    # The server "dies" once both shards' processes run (Ray may take a while to start a
    # worker on a loaded machine), so the check is that every running shard is stopped.
    both_running = time.monotonic() + 120

    def watch() -> str | None:
        pids = [(shards.read_record(ln.shard.job) or ln.shard.record).pid for ln in launches]
        if all(pids) or time.monotonic() > both_running:
            return "the server at 127.0.0.1:1 stopped answering"
        return None

    pacer = executors.Pacer(watch, None, watch_every_s=0.5)
    t0, raised = time.monotonic(), None
    try:
        run_ray(launches, pacer, address="auto", poll_s=0.2)
    except harbor_job.JobAborted as exc:
        raised = str(exc)
    seconds = time.monotonic() - t0
    pids = [shards.read_record(ln.shard.job).pid for ln in launches]
    ray.shutdown()
    (out / "ray.json").write_text(json.dumps(
        {"raised": raised, "pids": pids, "stopped": stopped(pids), "seconds": seconds}))
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
