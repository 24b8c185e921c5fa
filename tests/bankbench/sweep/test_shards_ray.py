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


@pytest.fixture(scope="module")
def ray_run(tmp_path_factory) -> Path:
    """One loopback-only namespace and one two-node Ray cluster for both tests: the dead-server
    stop, then the sweep (ray_netns.py); each test reads what its part wrote."""
    pytest.importorskip("ray")
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("ip"):
        pytest.skip("needs root, unshare and ip for a loopback-only network namespace")
    out = tmp_path_factory.mktemp("ray")
    # The cluster starts with SIGINT ignored, as a node started by a script's background job
    # (a CI runner, `nohup ray start ... &`) does, whatever the shell that runs the tests: every
    # Ray worker then inherits it, which Ray's cancel of a running task does not get through.
    script = (f"ip link set lo up && trap '' INT && "
              f"exec {sys.executable} -m tests.bankbench.sweep.ray_netns {out}")
    done = subprocess.run(["unshare", "-n", "sh", "-c", script], cwd=ROOT,
                          capture_output=True, text=True, timeout=1140)
    (out / "netns.out").write_text(done.stdout + done.stderr)
    return out


def _result(path: Path, out: Path) -> dict:
    assert path.is_file(), (out / "netns.out").read_text()[-4000:]
    result = json.loads(path.read_text())
    assert "error" not in result, result["error"]
    return result


def test_two_shards_run_as_ray_tasks_on_two_nodes(ray_run):
    out = (ray_run / "sweep.out").read_text() if (ray_run / "sweep.out").is_file() else ""
    result = _result(ray_run / "exit.json", ray_run)
    assert result["code"] == 0, out[-4000:]
    assert len(result["nodes"]) == 2

    level = ray_run / "r" / "c2"
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
    report = (ray_run / "r" / "report.md").read_text()
    assert "| s0 |" in report and "| s1 |" in report


def test_a_dead_server_stops_every_ray_shard_of_the_level(ray_run):
    """The Ray executor watches the server as the local one does: a watch that says the
    server is gone cancels both shards' Ray tasks, their processes end, JobAborted is raised
    (stand-in `sleep` commands in place of Harbor; the real two-node cluster of the sweep)."""
    result = _result(ray_run / "dead" / "ray.json", ray_run)
    assert result["raised"] and "stopped answering" in result["raised"]
    assert all(result["pids"]) and result["stopped"], result
    # stopped by SIGINT, the step that lets Harbor write what it can (a Ray worker's children
    # inherit its blocked SIGINT unless the shard unblocks it), sent once the cancel reached
    # the task on workers that ignore SIGINT
    assert result["sigint"] == [True, True], result
    # and Harbor, which keeps an ignored SIGINT as any Python program does, started with it
    # not ignored
    assert result["sigint_ignored"] == [False, False], result
    assert result["seconds"] < 200  # stopped, not run to the stand-ins' 240 s end
    # and at once: not when the executor's wait for the cancelled tasks (60 s) ran out
    assert result["stop_seconds"] < 30, result
