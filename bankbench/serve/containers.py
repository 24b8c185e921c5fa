"""GPU profile → container specs: pure functions, testable without a Docker engine.

Every container uses host networking, so the frontend, the workers and (optionally) etcd/NATS
talk over 127.0.0.1 exactly as the CPU stacks do; each worker gets its own GPUs through a
device request and its own KV-event port. File discovery shares a named volume.
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, Field

from bankbench.serve.gpu_profiles import GpuProfile, WorkerGroup

DISCOVERY_MOUNT = "/dynamo-discovery"
HF_CACHE_MOUNT = "/root/.cache/huggingface"
KV_EVENTS_BASE_PORT = 5557
BOOTSTRAP_BASE_PORT = 12345
PASS_ENV = ["HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"]  # forwarded by name at start, never stored


class DeviceRequestSpec(BaseModel):
    driver: str = "nvidia"
    device_ids: list[str]
    capabilities: list[list[str]] = Field(default_factory=lambda: [["gpu"]])


class MountSpec(BaseModel):
    type: Literal["bind", "volume"]
    source: str
    target: str
    read_only: bool = False


class ContainerSpec(BaseModel):
    """Everything `docker run` needs for one component."""

    name: str
    role: Literal["frontend", "worker", "prefill", "decode", "etcd", "nats"]
    image: str
    command: list[str]
    environment: dict[str, str] = Field(default_factory=dict)
    pass_env: list[str] = Field(default_factory=list, description="host variables forwarded")
    device_requests: list[DeviceRequestSpec] = Field(default_factory=list)
    mounts: list[MountSpec] = Field(default_factory=list)
    ports: list[int] = Field(default_factory=list, description="host ports it listens on")
    network_mode: str = "host"
    ipc_mode: str | None = None
    shm_size: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)


def discovery_env(profile: GpuProfile) -> dict[str, str]:
    env = {
        "DYN_REQUEST_PLANE": "tcp",
        "DYN_TCP_RPC_HOST": "127.0.0.1",
        "DYN_TCP_RESPONSE_STREAM_HOST": "127.0.0.1",
        "DYN_EVENT_PLANE_HOST": "127.0.0.1",
        "DYN_SYSTEM_HOST": "127.0.0.1",
    }
    if profile.discovery == "file":
        env |= {"DYN_DISCOVERY_BACKEND": "file", "DYN_FILE_KV": DISCOVERY_MOUNT,
                "DYN_EVENT_PLANE": "zmq"}
    else:
        env |= {"DYN_DISCOVERY_BACKEND": "etcd", "ETCD_ENDPOINTS": "http://127.0.0.1:2379",
                "NATS_SERVER": "nats://127.0.0.1:4222", "DYN_EVENT_PLANE": "nats"}
    return env


def assign_gpus(profile: GpuProfile) -> dict[str, list[list[int]]]:
    """Role → one device-id list per worker. Explicit `gpus` are used as given; groups without
    them take the next ids not used by any explicit group."""
    explicit = {g for grp in profile.groups().values() for g in (grp.gpus or [])}
    next_id = 0
    out: dict[str, list[list[int]]] = {}
    for role, grp in profile.groups().items():
        ids = grp.gpus
        if ids is None:
            ids = []
            while len(ids) < grp.workers * grp.tp:
                if next_id not in explicit:
                    ids.append(next_id)
                next_id += 1
        out[role] = [ids[i * grp.tp:(i + 1) * grp.tp] for i in range(grp.workers)]
    return out


def _parser_args(profile: GpuProfile) -> list[str]:
    args = []
    if profile.tool_call_parser:
        args += ["--dyn-tool-call-parser", profile.tool_call_parser]
    if profile.reasoning_parser:
        args += ["--dyn-reasoning-parser", profile.reasoning_parser]
    return args


def worker_command(
    profile: GpuProfile, role: str, grp: WorkerGroup, index: int, kv_port: int
) -> list[str]:
    """The engine worker's argv inside its container."""
    if profile.engine == "sglang":
        cmd = ["python3", "-m", "dynamo.sglang", "--model-path", profile.model,
               "--served-model-name", profile.served_name, "--tp", str(grp.tp),
               "--trust-remote-code", "--page-size", "16"]
        if profile.kv_events and role != "decode":
            cmd += ["--kv-events-config", json.dumps(
                {"publisher": "zmq", "topic": "kv-events", "endpoint": f"tcp://*:{kv_port}"})]
        if role == "prefill":
            cmd += ["--disaggregation-mode", "prefill", "--disaggregation-transfer-backend",
                    "nixl", "--disaggregation-bootstrap-port", str(BOOTSTRAP_BASE_PORT + index)]
        elif role == "decode":
            cmd += ["--disaggregation-mode", "decode", "--disaggregation-transfer-backend", "nixl"]
    else:
        cmd = ["python3", "-m", "dynamo.vllm", "--model", profile.model,
               "--served-model-name", profile.served_name,
               "--tensor-parallel-size", str(grp.tp), "--block-size", "16"]
        if profile.kv_events:
            cmd += ["--kv-events-config", json.dumps(
                {"enable_kv_cache_events": True, "publisher": "zmq",
                 "endpoint": f"tcp://*:{kv_port}"})]
    return cmd + _parser_args(profile) + list(grp.extra_args)


def frontend_command(profile: GpuProfile, port: int) -> list[str]:
    return ["python3", "-m", "dynamo.frontend", "--http-host", "0.0.0.0",
            "--http-port", str(port), "--router-mode", profile.router,
            *profile.frontend_args]


def build_specs(profile: GpuProfile, stack_id: str, port: int | None = None) -> list[ContainerSpec]:
    """All containers of the stack in start order: [etcd, nats,] frontend, workers."""
    port = port or profile.frontend_port
    labels = {"bankbench.stack": stack_id, "bankbench.profile": profile.name}
    env = discovery_env(profile)
    shared: list[MountSpec] = []
    if profile.discovery == "file":
        shared.append(MountSpec(type="volume", source=f"{stack_id}-discovery",
                                target=DISCOVERY_MOUNT))
    specs: list[ContainerSpec] = []
    if profile.discovery == "etcd":
        specs.append(ContainerSpec(
            name=f"{stack_id}-etcd", role="etcd", image=profile.etcd_image,
            command=["etcd", "--listen-client-urls", "http://127.0.0.1:2379",
                     "--advertise-client-urls", "http://127.0.0.1:2379",
                     "--data-dir", "/tmp/etcd"],
            ports=[2379], labels=labels | {"bankbench.component": "etcd"}))
        specs.append(ContainerSpec(
            name=f"{stack_id}-nats", role="nats", image=profile.nats_image,
            command=["-js", "--addr", "127.0.0.1", "-p", "4222"],
            ports=[4222], labels=labels | {"bankbench.component": "nats"}))
    specs.append(ContainerSpec(
        name=f"{stack_id}-frontend", role="frontend", image=profile.image,
        command=frontend_command(profile, port), environment=dict(env), mounts=list(shared),
        ports=[port], labels=labels | {"bankbench.component": "frontend"}))
    hf = MountSpec(type="bind", source=profile.hf_cache, target=HF_CACHE_MOUNT)
    gpu_sets = assign_gpus(profile)
    index = 0
    for role, grp in profile.groups().items():
        for i, ids in enumerate(gpu_sets[role]):
            kv_port = KV_EVENTS_BASE_PORT + index
            name = f"{role}-{i}"
            specs.append(ContainerSpec(
                name=f"{stack_id}-{name}", role=role, image=profile.image,
                command=worker_command(profile, role, grp, i, kv_port),
                environment=dict(env), pass_env=list(PASS_ENV),
                device_requests=[DeviceRequestSpec(device_ids=[str(g) for g in ids])],
                mounts=[*shared, hf],
                ports=[kv_port] if profile.kv_events else [],
                ipc_mode="host", shm_size=profile.shm_size,
                labels=labels | {"bankbench.component": name}))
            index += 1
    return specs
