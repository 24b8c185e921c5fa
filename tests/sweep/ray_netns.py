"""Run inside a private network namespace (loopback only) by test_shards_ray.py: the Dynamo
mocker, a real two-node Ray cluster (`ray.cluster_utils.Cluster`, one CPU per node), and
`bankbench sweep --ray <cluster> --shards 2` as a user runs it. Ray advertises a non-loopback
address wherever the machine has one, so it must not run in the host's namespace.

    python -m tests.sweep.ray_netns OUT_DIR       # writes OUT_DIR/sweep.out and exit.json
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.built_tasks import CHEAP_LABELS


def main(out: Path) -> int:
    import ray
    from ray.cluster_utils import Cluster

    from bankbench.serve import api

    node = {"num_cpus": 1, "object_store_memory": 80 * 1024 * 1024,
            "include_dashboard": False}
    cluster = Cluster(initialize_head=True, head_node_args=dict(node))
    cluster.add_node(num_cpus=1, object_store_memory=80 * 1024 * 1024)
    try:
        cluster.wait_for_nodes()
        with api.running("cpu-mocker", workers=1, state_dir=out / "server",
                         options={"speedup_ratio": 5.0}) as srv:
            done = subprocess.run(
                [sys.executable, "-m", "bankbench", "sweep", "--base-url", srv.base_url,
                 "--model", srv.model, "--source", "sample", "--labels", CHEAP_LABELS,
                 "--limit", "4", "--levels", "2",
                 "--shards", "2", "--ray", cluster.address, "--out", str(out), "--name", "r"],
                capture_output=True, text=True, timeout=600,
                env={**os.environ, "HARBOR_TELEMETRY": "0",
                     "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
        (out / "sweep.out").write_text(done.stdout + done.stderr)
        ray.init(address=cluster.address)
        nodes = [n["NodeID"] for n in ray.nodes() if n["Alive"]]
        ray.shutdown()
        (out / "exit.json").write_text(json.dumps({"code": done.returncode, "nodes": nodes}))
    finally:
        cluster.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
