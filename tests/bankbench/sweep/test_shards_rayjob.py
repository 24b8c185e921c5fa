"""`bankbench sweep --rayjob IMAGE`: the KubeRay RayJob manifest for a sweep, printed by a dry
run and read back here as Kubernetes would read it."""

from __future__ import annotations

import shlex

import yaml

from tests.support.cli import bankbench

SWEEP = ["--base-url", "http://dynamo-frontend.dynamo:8000/v1", "--model", "llama",
         "--levels", "64,128", "--shards", "4", "--ak", "self_eval=true"]


def _render(*args: str) -> dict:
    done = bankbench("sweep", *args, "--rayjob", "registry.example/bankbench:1", timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    return yaml.safe_load(done.stdout)


def test_the_rayjob_runs_the_same_sweep_with_ray_on_shared_storage(tmp_path):
    job = _render(*SWEEP, "--out", str(tmp_path), "--name", "cap-64")
    assert job["apiVersion"] == "ray.io/v1" and job["kind"] == "RayJob"
    assert job["metadata"]["name"] == "bankbench-cap-64"
    assert not list(tmp_path.iterdir())  # a dry run: nothing built, nothing run
    spec = job["spec"]
    argv = shlex.split(spec["entrypoint"])
    assert argv[:2] == ["bankbench", "sweep"]
    assert argv[2:2 + len(SWEEP)] == SWEEP  # the options as typed, in order
    assert argv[argv.index("--ray") + 1] == "auto"
    assert argv[argv.index("--out") + 1].startswith("/shared/")
    assert argv[argv.index("--name") + 1] == "cap-64"
    assert "--rayjob" not in argv and str(tmp_path) not in argv
    # The entrypoint is itself a valid sweep command: rendering it again gives it back.
    again = _render(*argv[2:])
    assert again["spec"]["entrypoint"] == spec["entrypoint"]

    cluster = spec["rayClusterSpec"]
    assert cluster["rayVersion"] == "2.60.0"
    assert cluster["headGroupSpec"]["rayStartParams"]["num-cpus"] == "0"  # driver only
    (workers,) = cluster["workerGroupSpecs"]
    assert workers["replicas"] == workers["minReplicas"] == workers["maxReplicas"] == 4
    assert workers["rayStartParams"]["num-cpus"] == "1"  # one shard per pod
    for group in (cluster["headGroupSpec"], workers):
        pod = group["template"]["spec"]
        (container,) = pod["containers"]
        assert container["image"] == "registry.example/bankbench:1"
        mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
        assert mounts == {"shared": "/shared"}
        claims = {v["name"]: v["persistentVolumeClaim"]["claimName"] for v in pod["volumes"]}
        assert claims == {"shared": "bankbench-shared"}
        assert {"name": "HARBOR_TELEMETRY", "value": "0"} in container["env"]
    sandbox = workers["template"]["spec"]["containers"][0]["securityContext"]
    assert sandbox["runAsUser"] == 0 and "SYS_ADMIN" in sandbox["capabilities"]["add"]


def test_a_bad_sweep_is_refused_before_any_manifest():
    done = bankbench("sweep", "--base-url", "http://x/v1", "--levels", "4",
                     "--rayjob", "img", timeout=60)
    assert done.returncode == 2 and not done.stdout
    assert "--model" in done.stderr
