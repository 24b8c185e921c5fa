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
    assert (tmp_path / "state" / "discovery").stat().st_mode & 0o777 == 0o777


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
