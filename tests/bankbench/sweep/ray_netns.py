"""Run inside a private network namespace (loopback only) by test_shards_ray.py: a real two-node
Ray cluster (`ray.cluster_utils.Cluster`, one CPU per node) that serves both of its checks in
turn. First a level's two stand-in shards and a server watch that reports the server gone
(ray_dead_server.py); then the Dynamo mocker and `bankbench sweep --ray <cluster> --shards 2` as
a user runs it. Ray advertises a non-loopback address wherever the machine has one, so it
must not run in the host's namespace.

    python -m tests.bankbench.sweep.ray_netns OUT_DIR
    # writes OUT_DIR/sweep.out and exit.json (the sweep), OUT_DIR/dead/ray.json (the stop);
    # a check that raised writes {"error": traceback} instead, and the other still runs
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

from tests.support.built_tasks import CHEAP_LABELS


def sweep(out: Path, cluster) -> dict:
    from bankbench.serve import api

    address = cluster.address

    with api.running("cpu-mocker", workers=1, state_dir=out / "server",
                     options={"speedup_ratio": 5.0}) as srv:
        done = subprocess.run(
            [sys.executable, "-m", "bankbench", "sweep", "--base-url", srv.base_url,
             "--model", srv.model, "--source", "sample", "--labels", CHEAP_LABELS,
             "--limit", "4", "--levels", "2",
             "--shards", "2", "--ray", address, "--out", str(out), "--name", "r", "--no-plots"],
            capture_output=True, text=True, timeout=600,
            env={**os.environ, "HARBOR_TELEMETRY": "0",
                 "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    (out / "sweep.out").write_text(done.stdout + done.stderr)
    # the cluster's own record of its nodes: no driver connect just to list them
    return {"code": done.returncode, "nodes": [n.node_id for n in cluster.list_all_nodes()]}


def _write(path: Path, check: Callable[[], dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        result = check()
    except Exception:
        result = {"error": traceback.format_exc()}
    path.write_text(json.dumps(result))


def _two_nodes(cluster_type):
    # Only what the checks use: no dashboard, log monitor (the driver reads no task output),
    # autoscaler monitor or usage reporting, and no token set-up in this loopback-only
    # namespace (the sweep it starts inherits the setting). Measured on the 2-core host: the
    # start 12.1 -> 8.7 s, 8.0 -> 6.2 CPU-s.
    os.environ.update({"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"})
    node = {"num_cpus": 1, "object_store_memory": 80 * 1024 * 1024,
            "include_log_monitor": False}
    for tries_left in (2, 1, 0):  # a loaded machine can miss Ray's start-up deadline
        cluster = None
        try:
            cluster = cluster_type(initialize_head=True, head_node_args={
                **node, "include_dashboard": False, "no_monitor": True})
            cluster.add_node(**node)
            cluster.wait_for_nodes()
            return cluster
        except Exception:
            if cluster is not None:
                cluster.shutdown()
            if not tries_left:
                raise


def main(out: Path) -> int:
    from ray.cluster_utils import Cluster

    from tests.bankbench.sweep.ray_dead_server import stop_on_dead_server

    cluster = _two_nodes(Cluster)
    try:
        # The stop first: on a cluster that has already run the sweep's job, Ray logged
        # "Cancelling a running task" but no KeyboardInterrupt reached the task, and the
        # shards ended only when the driver's job did (60 s later).
        _write(out / "dead" / "ray.json",
               lambda: stop_on_dead_server(out / "dead", cluster.address))
        _write(out / "exit.json", lambda: sweep(out, cluster))
    finally:
        cluster.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
