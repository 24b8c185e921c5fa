"""`bankbench sweep --ray` on a real two-node Ray cluster (`ray.cluster_utils.Cluster`) against
the real Dynamo mocker, with the real harbor CLI per shard: each shard ran as a Ray task on its
own node, every trial once, and the report reads the level.

Ray binds the machine's outside address when it has one, so everything runs in a private
network namespace with loopback only (tests/bankbench/sweep/ray_netns.py); that needs root (or
unprivileged user namespaces) and the optional extra `bankbench[ray]`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

pytestmark = [pytest.mark.dynamo, pytest.mark.harbor, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[3]


def test_two_shards_run_as_ray_tasks_on_two_nodes(tmp_path):
    pytest.importorskip("ray")
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("ip"):
        pytest.skip("needs root, unshare and ip for a loopback-only network namespace")
    script = (f"ip link set lo up && exec {sys.executable} -m tests.bankbench.sweep.ray_netns "
              f"{tmp_path}")
    done = subprocess.run(["unshare", "-n", "sh", "-c", script], cwd=ROOT,
                          capture_output=True, text=True, timeout=840)
    out = (tmp_path / "sweep.out").read_text() if (tmp_path / "sweep.out").is_file() else ""
    assert done.returncode == 0 and (tmp_path / "exit.json").is_file(), \
        done.stdout[-2000:] + done.stderr[-3000:] + out[-3000:]
    result = json.loads((tmp_path / "exit.json").read_text())
    assert result["code"] == 0, out[-4000:]
    assert len(result["nodes"]) == 2

    level = tmp_path / "r" / "c2"
    records = [json.loads((level / s / "shard.json").read_text()) for s in ("s0", "s1")]
    assert [r["concurrency"] for r in records] == [1, 1]
    assert all(r["state"] == "complete" and r["host"] and r["node"] for r in records)
    assert {r["node"] for r in records} == set(result["nodes"])  # one shard per node
    found: Counter = Counter()
    for shard in ("s0", "s1"):
        for res in (level / shard).glob("*/result.json"):
            found[json.loads(res.read_text())["task_name"]] += 1
    assert sorted(found.values()) == [1] * 4
    # The driver scraped /metrics once around the level; the report reads the shards.
    assert (level / "metrics_before.prom").is_file() and (level / "metrics_after.prom").is_file()
    report = (tmp_path / "r" / "report.md").read_text()
    assert "| s0 |" in report and "| s1 |" in report


def test_a_dead_server_stops_every_ray_shard_of_the_level(tmp_path):
    """The Ray executor watches the server as the local one does: a watch that says the
    server is gone cancels both shards' Ray tasks, their processes end, JobAborted is raised
    (stand-in `sleep` commands in place of Harbor; a real local Ray cluster)."""
    pytest.importorskip("ray")
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("ip"):
        pytest.skip("needs root, unshare and ip for a loopback-only network namespace")
    script = (f"ip link set lo up && exec {sys.executable} -m "
              f"tests.bankbench.sweep.ray_dead_server {tmp_path}")
    done = subprocess.run(["unshare", "-n", "sh", "-c", script], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and (tmp_path / "ray.json").is_file(), \
        done.stdout[-2000:] + done.stderr[-3000:]
    result = json.loads((tmp_path / "ray.json").read_text())
    assert result["raised"] and "stopped answering" in result["raised"]
    assert all(result["pids"]) and result["stopped"], result
    assert result["seconds"] < 200  # stopped, not run to the stand-ins' 240 s end
