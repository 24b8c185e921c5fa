"""A KubeRay RayJob manifest that runs one sweep on a Ray cluster in Kubernetes (a dry run:
`bankbench sweep … --rayjob IMAGE` prints it and runs nothing).

The RayJob's entrypoint is the same `bankbench sweep` command with `--ray auto` and the sweep
directory on a volume every pod mounts at the same path (the storage `--ray` needs); the head
runs only the driver (no CPUs for tasks), and one worker pod per shard runs one shard's Harbor.
What a worker needs for LocalEnvironment's sandbox is in docs/scaling.md.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

import yaml

RAY_VERSION = "2.60.0"  # the version bankbench[ray] pins
SHARED_PATH = "/shared"
SHARED_CLAIM = "bankbench-shared"  # a ReadWriteMany PersistentVolumeClaim
HARBOR_ENV = [{"name": "HARBOR_TELEMETRY", "value": "0"},
              {"name": "LITELLM_LOCAL_MODEL_COST_MAP", "value": "True"}]


def _container(name: str, image: str, cpu: str, memory: str) -> dict[str, Any]:
    return {
        "name": name, "image": image, "env": [dict(e) for e in HARBOR_ENV],
        "resources": {"requests": {"cpu": cpu, "memory": memory},
                      "limits": {"cpu": cpu, "memory": memory}},
        "volumeMounts": [{"name": "shared", "mountPath": SHARED_PATH}],
    }


def _pod(container: dict[str, Any], sandbox: bool) -> dict[str, Any]:
    if sandbox:
        # LocalEnvironment makes mount, PID and IPC namespaces per trial: root with
        # CAP_SYS_ADMIN in the pod (docs/scaling.md lists the alternatives).
        container["securityContext"] = {"runAsUser": 0,
                                        "capabilities": {"add": ["SYS_ADMIN"]},
                                        "seccompProfile": {"type": "Unconfined"},
                                        "appArmorProfile": {"type": "Unconfined"}}
    return {"spec": {"containers": [container],
                     "volumes": [{"name": "shared", "persistentVolumeClaim":
                                  {"claimName": SHARED_CLAIM}}]}}


def render(sweep_args: list[str], *, image: str, shards: int, name: str) -> str:
    """The RayJob for `bankbench sweep <sweep_args>` (without --ray/--out/--rayjob), as YAML."""
    slug = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")[:40] or "sweep"
    entrypoint = shlex.join(["bankbench", "sweep", *sweep_args, "--ray", "auto",
                             "--out", f"{SHARED_PATH}/jobs", "--name", name])
    manifest = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": f"bankbench-{slug}"},
        "spec": {
            "entrypoint": entrypoint,
            "submissionMode": "K8sJobMode",
            "shutdownAfterJobFinishes": True,
            "ttlSecondsAfterFinished": 3600,
            "rayClusterSpec": {
                "rayVersion": RAY_VERSION,
                "headGroupSpec": {
                    # The driver: builds tasks, scrapes /metrics, writes the report.
                    "rayStartParams": {"num-cpus": "0"},
                    "template": _pod(_container("ray-head", image, "2", "4Gi"), False),
                },
                "workerGroupSpecs": [{
                    "groupName": "shards",
                    "replicas": shards, "minReplicas": shards, "maxReplicas": shards,
                    # One shard (one Harbor process, num_cpus=1) per worker pod; the pod's
                    # other cores run its trials' sandboxes, banks and verifiers.
                    "rayStartParams": {"num-cpus": "1"},
                    "template": _pod(_container("shard", image, "4", "8Gi"), True),
                }],
            },
        },
    }
    return yaml.safe_dump(manifest, sort_keys=False)
