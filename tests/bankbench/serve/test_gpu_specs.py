"""GPU profiles → container specs, checked without a Docker engine.

No GPU or Docker exists where this suite runs, so the GPU profiles are pinned as specs against
what Dynamo 1.6.x's own images, scripts and docs do. Each test names the behaviour it guards.
"""

import json
import shlex

import pytest

from bankbench.procs import free_port
from bankbench.serve import api
from bankbench.serve.containers import build_specs, plan_ports
from bankbench.serve.errors import ServeError
from bankbench.serve.gpu_profiles import load_profile


def all_free(port):
    return True


def specs_for(profile, frontend=None, **kw):
    ports = plan_ports(profile, all_free, frontend)
    return build_specs(profile, "st", ports, discovery_dir="/state/discovery", **kw)


def by_role(specs, role):
    return [s for s in specs if s.role == role]


def test_vllm_tp2_two_workers_get_disjoint_gpu_pairs():
    profile = load_profile("gpu-vllm", {"worker.tp": "2", "workers": "2", "router": "kv"})
    specs = specs_for(profile, frontend=18080)
    assert [s.role for s in specs] == ["frontend", "worker", "worker"]
    front = specs[0]
    assert front.command[:3] == ["python3", "-m", "dynamo.frontend"]
    assert front.command[front.command.index("--http-port") + 1] == "18080"
    assert front.command[front.command.index("--router-mode") + 1] == "kv"
    assert front.ports == [18080] and not front.device_requests
    workers = by_role(specs, "worker")
    assert [w.device_requests[0].device_ids for w in workers] == [["0", "1"], ["2", "3"]]
    assert all(w.device_requests[0].capabilities == [["gpu"]] for w in workers)
    cmd = workers[1].command
    assert cmd[:3] == ["python3", "-m", "dynamo.vllm"]
    assert cmd[cmd.index("--tensor-parallel-size") + 1] == "2"
    assert cmd[cmd.index("--dyn-tool-call-parser") + 1] == "hermes"
    assert "--connector" not in cmd
    kv = json.loads(cmd[cmd.index("--kv-events-config") + 1])
    assert kv["enable_kv_cache_events"] is True and kv["endpoint"] == "tcp://*:5558"
    # One KV-event port and one DYN_SYSTEM_PORT each (host networking); the system ports are
    # new: Dynamo's launch scripts give every worker its own (8081, 8082, …).
    assert [w.ports for w in workers] == [[5557, 8081], [5558, 8082]]
    assert [w.environment["DYN_SYSTEM_PORT"] for w in workers] == ["8081", "8082"]


def test_file_discovery_shares_one_host_folder_and_no_etcd():
    specs = specs_for(load_profile("gpu-sglang"))
    assert not by_role(specs, "etcd") and not by_role(specs, "nats")
    for s in specs:
        assert s.environment["DYN_DISCOVERY_BACKEND"] == "file"
        assert s.environment["DYN_FILE_KV"] == "/dynamo-discovery"
        assert s.environment["DYN_TCP_RPC_HOST"] == "127.0.0.1"
        assert any(m.type == "bind" and m.source == "/state/discovery"
                   and m.target == "/dynamo-discovery" for m in s.mounts)
        assert s.network_mode == "host"
    worker = by_role(specs, "worker")[0]
    assert worker.command[:3] == ["python3", "-m", "dynamo.sglang"]
    assert worker.command[worker.command.index("--dyn-reasoning-parser") + 1] == "qwen3"
    assert "HF_TOKEN" in worker.pass_env and "HF_TOKEN" not in worker.environment


def test_row1_images_user_can_write_discovery(tmp_path):
    # Dynamo 1.6.x runtime images run as user `dynamo` (UID 1000); a new named volume at
    # /dynamo-discovery would be root-owned 0755 and workers could not register. The stack's
    # discovery folder is a host folder made writable for that user before the start.
    from bankbench.serve.gpu_plan import plan_stack, prepare_host_dirs

    profile = load_profile("gpu-sglang", {"hf_cache": str(tmp_path / "hf")})
    plan = plan_stack(profile, "st", tmp_path / "state", strict=False, is_free=all_free)
    assert all(s.user is None for s in plan.specs)  # the image's own user
    assert not any(m.type == "volume" for s in plan.specs for m in s.mounts)
    prepare_host_dirs(plan)
    folder = tmp_path / "state" / "discovery" / "st"  # one per stack: never an old one's
    assert folder.stat().st_mode & 0o777 == 0o777
    assert all(m.source == str(folder) for s in plan.specs for m in s.mounts
               if m.target == "/dynamo-discovery")


def test_row2_hf_cache_is_mounted_at_the_image_users_home():
    # Was /root/.cache/huggingface: wrong for images whose user is `dynamo` with HOME
    # /home/dynamo (every start downloaded the model again). Dynamo's run.sh mounts the cache at
    # /home/dynamo/.cache/huggingface unless it runs the container as root.
    for name in ("gpu-sglang", "gpu-vllm", "gpu-sglang-disagg"):
        for s in specs_for(load_profile(name)):
            assert any(m.target == "/home/dynamo/.cache/huggingface" for m in s.mounts)
            assert s.environment["HF_HOME"] == "/home/dynamo/.cache/huggingface"
    root = specs_for(load_profile("gpu-vllm", {"run_as": "root"}))
    assert all(s.user == "root" for s in root)
    assert all(s.environment["HF_HOME"] == "/root/.cache/huggingface" for s in root)


def test_row3_missing_bind_sources_are_created_first(tmp_path):
    # Docker refuses a bind mount whose host folder does not exist (run.sh: mkdir -p first).
    from bankbench.serve.gpu_plan import plan_stack, prepare_host_dirs, render_dry_run

    hf = tmp_path / "fresh" / "hf"
    plan = plan_stack(load_profile("gpu-vllm", {"hf_cache": str(hf)}), "st", tmp_path / "s",
                      strict=False, is_free=all_free)
    binds = {m.source for s in plan.specs for m in s.mounts if m.type == "bind"}
    assert binds <= {str(d) for d in plan.host_dirs}
    prepare_host_dirs(plan)
    assert hf.is_dir()
    text = render_dry_run(plan)
    assert text.index("mkdir -p") < text.index("docker run")


def test_row4_disagg_sglang_workers_listen_on_all_addresses():
    # SGLang's bootstrap server would listen on 127.0.0.1 while Dynamo advertises the host's
    # address; Dynamo's disagg.sh passes --host 0.0.0.0 to prefill and decode.
    specs = specs_for(load_profile("gpu-sglang-disagg"))
    for role in ("prefill", "decode"):
        cmd = by_role(specs, role)[0].command
        assert cmd[cmd.index("--host") + 1] == "0.0.0.0"


def test_disagg_prefill_and_decode_on_separate_gpu_sets():
    profile = load_profile("gpu-sglang-disagg", {"prefill.gpus": "0,1", "prefill.tp": "2",
                                                 "decode.gpus": "2,3", "decode.tp": "2"})
    specs = specs_for(profile)
    prefill, decode = by_role(specs, "prefill")[0], by_role(specs, "decode")[0]
    # Row 5: every GPU of the stack is visible to both (NIXL's cuda_ipc path needs the peer's
    # GPU), each worker computes on its own set: was device_ids [0,1] / [2,3] alone.
    assert prefill.device_requests[0].device_ids == ["0", "1", "2", "3"]
    assert decode.device_requests[0].device_ids == ["0", "1", "2", "3"]
    assert prefill.environment["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert decode.environment["CUDA_VISIBLE_DEVICES"] == "2,3"
    assert prefill.environment["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert prefill.command[prefill.command.index("--disaggregation-mode") + 1] == "prefill"
    assert prefill.command[prefill.command.index("--disaggregation-transfer-backend") + 1] \
        == "nixl"
    assert prefill.command[prefill.command.index("--disaggregation-bootstrap-port") + 1] \
        == "12345"
    assert decode.command[decode.command.index("--disaggregation-mode") + 1] == "decode"
    # Row 8 (was: no KV events from decode): Dynamo's disagg_router.sh gives decode workers
    # --kv-events-config too, so the kv router sees their caches.
    assert "--kv-events-config" in decode.command
    assert "--connector" not in prefill.command + decode.command


def test_row5_same_host_nixl_gets_shared_pids_ptrace_and_memlock():
    # UCX cuda_ipc cannot open another process's GPU memory across PID namespaces; Dynamo's
    # run.sh gives its containers --cap-add CAP_SYS_PTRACE, --ulimit memlock=-1 and --ipc host.
    specs = specs_for(load_profile("gpu-sglang-disagg"))
    frontend = by_role(specs, "frontend")[0]
    for s in by_role(specs, "prefill") + by_role(specs, "decode"):
        assert s.pid_mode == f"container:{frontend.name}"
        assert "SYS_PTRACE" in s.cap_add and s.ipc_mode == "host"
        assert s.ulimits["memlock"] == (-1, -1)
    # Aggregated workers keep their own PID namespace (nothing to transfer between them).
    assert all(s.pid_mode is None for s in specs_for(load_profile("gpu-vllm")))


def test_row6_frontend_reads_the_model_files_itself():
    # The frontend fetches tokenizer and config: without the cache and token, gated models and
    # offline hosts fail.
    front = by_role(specs_for(load_profile("gpu-vllm")), "frontend")[0]
    assert any(m.target == "/home/dynamo/.cache/huggingface" for m in front.mounts)
    assert "HF_TOKEN" in front.pass_env and "HF_TOKEN" not in front.environment


def test_row9_no_shm_size_beside_host_ipc():
    # Docker ignores --shm-size with --ipc host and Podman's Docker API rejects the pair.
    from bankbench.serve.gpu import run_kwargs

    for name in ("gpu-sglang", "gpu-vllm", "gpu-sglang-disagg"):
        for s in specs_for(load_profile(name)):
            assert not (s.shm_size and s.ipc_mode == "host")
            assert "shm_size" not in run_kwargs(s)


def test_row10_ports_are_chosen_free_per_stack():
    taken = set()

    def free(port):
        return port not in taken

    profile = load_profile("gpu-sglang-disagg", {"discovery": "etcd"})
    first = plan_ports(profile, free)
    assert first.frontend == 8000 and first.kv_events == [5557, 5558]
    assert first.bootstrap == [12345] and first.etcd == 2379
    taken |= set(first.all())  # the first stack is running
    second = plan_ports(profile, free)
    assert not set(first.all()) & set(second.all())
    assert len(set(second.all())) == len(second.all())
    specs = build_specs(profile, "b", second, discovery_dir="/d")
    assert specs[2].environment["ETCD_ENDPOINTS"] == f"http://127.0.0.1:{second.etcd}"
    etcd = specs[0].command  # etcd's peer port (2380 by default) moves with the stack too
    assert f"http://127.0.0.1:{second.etcd_peer}" in etcd
    assert f"default=http://127.0.0.1:{second.etcd_peer}" in etcd


def test_etcd_discovery_adds_etcd_and_nats_first():
    specs = specs_for(load_profile("gpu-vllm", {"discovery": "etcd"}))
    assert [s.role for s in specs][:3] == ["etcd", "nats", "frontend"]
    assert specs[2].environment["ETCD_ENDPOINTS"] == "http://127.0.0.1:2379"
    assert specs[2].environment["NATS_SERVER"] == "nats://127.0.0.1:4222"
    assert not any(m.target == "/dynamo-discovery" for s in specs for m in s.mounts)


@pytest.mark.parametrize(
    ("profile", "sets", "needle"),
    [
        ("gpu-vllm", {"worker.tp": "two"}, "worker.tp"),
        ("gpu-vllm", {"gpus": "0,1,2"}, "workers × tp = 1"),
        ("gpu-vllm", {"router": "fastest"}, "router"),
        ("gpu-vllm", {"imagee": "x"}, "unknown option 'imagee'"),
        ("gpu-vllm", {"worker.cores": "4"}, "unknown option 'worker.cores'"),
        ("gpu-sglang-disagg", {"tp": "2"}, "use prefill.tp or decode.tp"),
        ("gpu-sglang-disagg", {"decode.gpus": "0"}, "overlap"),
        ("gpu-vllm", {"run_as": "admin"}, "run_as"),
        ("gpu-vllm", {"max_model_len": "long"}, "max_model_len"),
    ],
)
def test_bad_overrides_name_the_key(profile, sets, needle):
    with pytest.raises(ServeError) as err:
        load_profile(profile, sets)
    assert needle in str(err.value)
    assert "\n" not in str(err.value)


def test_gpu_up_without_docker_fails_cleanly(tmp_path, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    with pytest.raises(ServeError, match="Docker engine not reachable"):
        api.up("gpu-vllm", port=free_port(), state_dir=tmp_path / "s")
    assert not (tmp_path / "s" / "state.json").exists()


# --- serve up --dry-run: the printed commands are the ones that run, and match Dynamo's own ---

# Flags of `docker run` in Dynamo's container/run.sh that GPU workers need.
RUN_SH_WORKER_FLAGS = [["--network", "host"], ["--ipc", "host"], ["--ulimit", "memlock=-1"],
                       ["--ulimit", "stack=67108864"], ["--cap-add", "SYS_PTRACE"]]
# Worker flags of examples/backends/sglang/launch/disagg.sh (prefill / decode).
DISAGG_SH = {
    "prefill": ["--disaggregation-mode", "prefill", "--disaggregation-bootstrap-port",
                "--host", "0.0.0.0", "--disaggregation-transfer-backend", "nixl", "--page-size",
                "--tp", "--trust-remote-code", "--served-model-name", "--model-path"],
    "decode": ["--disaggregation-mode", "decode", "--host", "0.0.0.0",
               "--disaggregation-transfer-backend", "nixl", "--page-size", "--tp",
               "--trust-remote-code", "--served-model-name", "--model-path"],
}


def dry_run_commands(text):
    """The shell commands of a dry-run text (comments dropped, continuations joined)."""
    joined = text.replace("\\\n", " ")
    return [shlex.split(line) for line in joined.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def has_pair(argv, pair):
    return any(argv[i:i + 2] == pair for i in range(len(argv) - 1))


@pytest.mark.parametrize("name", ["gpu-sglang", "gpu-vllm", "gpu-sglang-disagg"])
def test_dry_run_prints_the_specs_that_run(name, tmp_path):
    from bankbench.serve.gpu import run_kwargs
    from bankbench.serve.gpu_plan import docker_run_argv, plan_stack, render_dry_run

    profile = load_profile(name, {"hf_cache": str(tmp_path / "hf")})
    plan = plan_stack(profile, "st", tmp_path / "s", strict=False, is_free=all_free)
    commands = dry_run_commands(render_dry_run(plan))
    assert commands[0][:2] == ["mkdir", "-p"]
    runs = [c for c in commands if c[:2] == ["docker", "run"]]
    assert runs == [docker_run_argv(s) for s in plan.specs]  # exact, in start order
    for spec, argv in zip(plan.specs, runs, strict=True):
        kw = run_kwargs(spec)  # what the docker SDK is given says the same
        assert argv[-len(kw["command"]):] == kw["command"] and kw["image"] in argv
        assert has_pair(argv, ["--name", kw["name"]])
        for key, value in kw["environment"].items():
            assert has_pair(argv, ["-e", f"{key}={value}"])
        for var in spec.pass_env:
            assert has_pair(argv, ["-e", var]) and var not in kw["environment"]
        if "pid_mode" in kw:
            assert has_pair(argv, ["--pid", kw["pid_mode"]])
        for req in kw["device_requests"]:
            assert has_pair(argv, ["--gpus", f'"device={",".join(req["DeviceIDs"])}"'])
        for ul in kw.get("ulimits", []):
            assert any(a.startswith(f"{ul['Name']}=") for a in argv)
        if spec.role in ("worker", "prefill", "decode"):
            for pair in RUN_SH_WORKER_FLAGS:
                assert has_pair(argv, pair), (spec.name, pair)
            assert has_pair(argv, ["-v", f"{tmp_path / 'hf'}:/home/dynamo/.cache/huggingface"])
        if spec.role in DISAGG_SH:
            for flag in DISAGG_SH[spec.role]:
                assert flag in spec.command, (spec.role, flag)


def test_dry_run_from_the_cli_starts_nothing(tmp_path):
    import os
    import subprocess
    import sys

    env = dict(os.environ, BANKBENCH_SERVE_STATE=str(tmp_path / "serve"),
               DOCKER_HOST=f"unix://{tmp_path}/none.sock")
    proc = subprocess.run(
        [sys.executable, "-m", "bankbench", "serve", "up", "--profile", "gpu-sglang-disagg",
         "--dry-run", "--set", f"hf_cache={tmp_path / 'hf'}"],
        capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("docker run") == 3
    assert not (tmp_path / "hf").exists() and not (tmp_path / "serve").exists()


# --- row 11: pulls show progress; a timeout shows each container's own log ---

class FakeImages:
    def __init__(self, present):
        self.present = present

    def get(self, image):
        import docker

        if image not in self.present:
            raise docker.errors.ImageNotFound(image)


class FakeApi:
    def __init__(self):
        self.pulled = []

    def pull(self, repo, tag, stream, decode):
        self.pulled.append(f"{repo}:{tag}")
        for i in range(3):
            yield {"id": "layer", "status": "Downloading",
                   "progressDetail": {"current": (i + 1) * 10**9, "total": 3 * 10**9}}
        yield {"status": "Download complete"}


class FakeClient:
    def __init__(self, present):
        self.images, self.api = FakeImages(present), FakeApi()


def test_row11_missing_images_are_pulled_with_progress(capsys):
    from bankbench.serve.gpu import pull_missing

    client = FakeClient(present={"nats:2.11"})
    image = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.6.1"
    pull_missing(client, [image, image, "nats:2.11"], every_s=0)
    err = capsys.readouterr().err
    assert client.api.pulled == [image]  # once, and only what is missing
    assert "pulling nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.6.1" in err
    assert "3.0 / 3.0 GB" in err and "pulled " in err


def test_row11_timeout_error_shows_each_containers_log(monkeypatch):
    from bankbench.serve import gpu
    from bankbench.serve.state import Component, ServerState

    state = ServerState(profile="gpu-vllm", base_url="http://127.0.0.1:9/v1", model="m",
                        components=[Component(name=n, kind="container", container_id=n)
                                    for n in ("frontend", "worker-0")])
    monkeypatch.setattr(gpu, "container_logs", lambda cid, lines=40: f"{cid} says hello\n")
    text, whose = gpu.container_tails(state)
    err = ServeError("gpu-vllm: not ready after 5 s (x)", text, whose)
    assert "last lines of each container's log" in str(err)
    assert "== frontend ==\nfrontend says hello" in str(err)
    assert "== worker-0 ==\nworker-0 says hello" in str(err)


@pytest.mark.parametrize("name", ["gpu-vllm", "gpu-sglang", "gpu-sglang-disagg"])
def test_deterministic_switch_serves_batch_invariant(name):
    """--set deterministic=true: vLLM workers get VLLM_BATCH_INVARIANT=1 (vLLM's switch, an
    environment variable), SGLang workers --enable-deterministic-inference (SGLang's flag);
    off by default, and the frontend is untouched either way."""
    for on in (False, True):
        profile = load_profile(name, {"deterministic": str(on).lower()})
        specs = specs_for(profile)
        workers = [s for s in specs if s.role in ("worker", "prefill", "decode")]
        assert workers
        for spec in workers:
            flag = "--enable-deterministic-inference" in spec.command
            env = spec.environment.get("VLLM_BATCH_INVARIANT") == "1"
            if profile.engine == "vllm":
                assert (env, flag) == (on, False)
            else:
                assert (flag, env) == (on, False)
        front = by_role(specs, "frontend")[0]
        assert "VLLM_BATCH_INVARIANT" not in front.environment
        assert "--enable-deterministic-inference" not in front.command
