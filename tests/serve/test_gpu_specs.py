"""GPU profiles → container specs, checked without a Docker engine."""

import json

import pytest

from bankbench.procs import free_port
from bankbench.serve import api
from bankbench.serve.containers import build_specs
from bankbench.serve.errors import ServeError
from bankbench.serve.gpu_profiles import load_profile


def by_role(specs, role):
    return [s for s in specs if s.role == role]


def test_vllm_tp2_two_workers_get_disjoint_gpu_pairs():
    profile = load_profile("gpu-vllm", {"worker.tp": "2", "workers": "2", "router": "kv"})
    specs = build_specs(profile, "st", port=18080)
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
    kv = json.loads(cmd[cmd.index("--kv-events-config") + 1])
    assert kv["enable_kv_cache_events"] is True and kv["endpoint"] == "tcp://*:5558"
    assert [w.ports for w in workers] == [[5557], [5558]]  # one KV-event port each (host net)


def test_file_discovery_shares_one_volume_and_no_etcd():
    specs = build_specs(load_profile("gpu-sglang"), "st")
    assert not by_role(specs, "etcd") and not by_role(specs, "nats")
    for s in specs:
        assert s.environment["DYN_DISCOVERY_BACKEND"] == "file"
        assert s.environment["DYN_FILE_KV"] == "/dynamo-discovery"
        assert s.environment["DYN_TCP_RPC_HOST"] == "127.0.0.1"
        assert any(m.type == "volume" and m.source == "st-discovery" for m in s.mounts)
        assert s.network_mode == "host"
    worker = by_role(specs, "worker")[0]
    assert worker.command[:3] == ["python3", "-m", "dynamo.sglang"]
    assert worker.command[worker.command.index("--dyn-reasoning-parser") + 1] == "qwen3"
    assert any(m.target == "/root/.cache/huggingface" for m in worker.mounts)
    assert "HF_TOKEN" in worker.pass_env and "HF_TOKEN" not in worker.environment


def test_etcd_discovery_adds_etcd_and_nats_first():
    specs = build_specs(load_profile("gpu-vllm", {"discovery": "etcd"}), "st")
    assert [s.role for s in specs][:3] == ["etcd", "nats", "frontend"]
    assert specs[2].environment["ETCD_ENDPOINTS"] == "http://127.0.0.1:2379"
    assert specs[2].environment["NATS_SERVER"] == "nats://127.0.0.1:4222"
    assert not any(m.type == "volume" for s in specs for m in s.mounts)


def test_disagg_prefill_and_decode_on_separate_gpu_sets():
    profile = load_profile("gpu-sglang-disagg", {"prefill.gpus": "0,1", "prefill.tp": "2",
                                                 "decode.gpus": "2,3", "decode.tp": "2"})
    specs = build_specs(profile, "st")
    prefill, decode = by_role(specs, "prefill")[0], by_role(specs, "decode")[0]
    assert prefill.device_requests[0].device_ids == ["0", "1"]
    assert decode.device_requests[0].device_ids == ["2", "3"]
    assert prefill.command[prefill.command.index("--disaggregation-mode") + 1] == "prefill"
    assert "--disaggregation-bootstrap-port" in prefill.command
    assert decode.command[decode.command.index("--disaggregation-mode") + 1] == "decode"
    assert "--kv-events-config" not in decode.command


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
