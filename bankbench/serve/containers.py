"""GPU profile → container specs: pure functions, testable without a Docker engine.

What each spec does, and the Dynamo 1.6.x behaviour it follows
(tests/bankbench/serve/test_gpu_specs.py pins each one):
- Host networking: frontend, workers and (optionally) etcd/NATS talk over 127.0.0.1 as the CPU
  stacks do. Every port a component listens on is chosen per stack (`plan_ports`), preferring
  the numbers Dynamo's own scripts use when free, so a second stack does not collide.
- The runtime images run as user `dynamo` (UID 1000, group 0, HOME /home/dynamo). Containers run
  as that user by default with the Hugging Face cache mounted at its HOME and `HF_HOME` pointing
  there; `run_as: root` mounts it at /root instead. File discovery uses a host folder of the
  stack (made world-writable before the start) instead of a root-owned named volume.
- The frontend gets the HF cache and HF_TOKEN too: it reads the tokenizer and config itself.
- Each worker gets its own `DYN_SYSTEM_PORT`, KV-event port and (prefill) bootstrap port;
  disaggregated SGLang workers listen on 0.0.0.0 (`--host`), since the bootstrap address Dynamo
  advertises is the host's, not loopback.
- Same-host NIXL transfers (UCX cuda_ipc) need the prefill and decode processes to share a PID
  namespace, see each other's GPUs, and have ptrace and unlimited locked memory: disaggregated
  workers join the frontend's PID namespace, see every GPU of the stack and pick their own with
  CUDA_VISIBLE_DEVICES.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, Field

from bankbench.serve.gpu_profiles import GpuProfile, WorkerGroup

DISCOVERY_MOUNT = "/dynamo-discovery"
IMAGE_HOME = "/home/dynamo"  # the runtime images' user `dynamo` (UID 1000, group 0)
IMAGE_UID = 1000
HF_CACHE_MOUNT = f"{IMAGE_HOME}/.cache/huggingface"
ROOT_HF_CACHE_MOUNT = "/root/.cache/huggingface"
PASS_ENV = ["HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"]  # forwarded by name at start, never stored
# Dynamo's launch scripts' numbers; used when free on this host, else the next free ones.
BASE_PORTS = {"frontend": 8000, "kv_events": 5557, "bootstrap": 12345, "system": 8081,
              "etcd": 2379, "nats": 4222}
# container/run.sh of Dynamo: what GPU workers need beyond the defaults.
WORKER_ULIMITS = {"memlock": (-1, -1), "stack": (67108864, 67108864), "nofile": (65536, 65536)}


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
    pid_mode: str | None = Field(default=None, description="container:<name> to share PIDs")
    user: str | None = Field(default=None, description="None: the image's own user")
    cap_add: list[str] = Field(default_factory=list)
    ulimits: dict[str, tuple[int, int]] = Field(default_factory=dict, description="soft, hard")
    shm_size: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)


class StackPorts(BaseModel):
    """Host ports of one stack (host networking: each must be free on the host)."""

    frontend: int
    kv_events: list[int] = Field(description="per worker, in start order")
    system: list[int] = Field(description="DYN_SYSTEM_PORT per worker, in start order")
    bootstrap: list[int] = Field(default_factory=list, description="per prefill worker")
    etcd: int | None = None
    etcd_peer: int | None = None
    nats: int | None = None

    def all(self) -> list[int]:
        extra = [p for p in (self.etcd, self.etcd_peer, self.nats) if p is not None]
        return [self.frontend, *self.kv_events, *self.system, *self.bootstrap, *extra]


def plan_ports(profile: GpuProfile, is_free: Callable[[int], bool],
               frontend: int | None = None) -> StackPorts:
    """Choose every port of the stack: Dynamo's usual numbers where free, else the next free
    ones; never the same port twice. `frontend` given is taken as is (checked by the caller)."""
    taken: set[int] = set()

    def pick(start: int) -> int:
        port = start
        while port in taken or not is_free(port):
            port += 1
        taken.add(port)
        return port

    if frontend is not None:
        taken.add(frontend)
    n_workers = sum(g.workers for g in profile.groups().values())
    n_prefill = profile.prefill.workers if profile.prefill else 0
    etcd = profile.discovery == "etcd"
    return StackPorts(
        frontend=frontend if frontend is not None else pick(BASE_PORTS["frontend"]),
        kv_events=[pick(BASE_PORTS["kv_events"]) for _ in range(n_workers)],
        system=[pick(BASE_PORTS["system"]) for _ in range(n_workers)],
        bootstrap=[pick(BASE_PORTS["bootstrap"]) for _ in range(n_prefill)],
        etcd=pick(BASE_PORTS["etcd"]) if etcd else None,
        etcd_peer=pick(BASE_PORTS["etcd"] + 1) if etcd else None,
        nats=pick(BASE_PORTS["nats"]) if etcd else None,
    )


def hf_mount_target(profile: GpuProfile) -> str:
    return ROOT_HF_CACHE_MOUNT if profile.run_as == "root" else HF_CACHE_MOUNT


def discovery_env(profile: GpuProfile, ports: StackPorts) -> dict[str, str]:
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
        env |= {"DYN_DISCOVERY_BACKEND": "etcd",
                "ETCD_ENDPOINTS": f"http://127.0.0.1:{ports.etcd}",
                "NATS_SERVER": f"nats://127.0.0.1:{ports.nats}", "DYN_EVENT_PLANE": "nats"}
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
    profile: GpuProfile, role: str, grp: WorkerGroup, kv_port: int,
    bootstrap_port: int | None = None, max_model_len: int | None = None,
) -> list[str]:
    """The engine worker's argv inside its container."""
    if profile.engine == "sglang":
        cmd = ["python3", "-m", "dynamo.sglang", "--model-path", profile.model,
               "--served-model-name", profile.served_name, "--tp", str(grp.tp),
               "--trust-remote-code", "--page-size", "16"]
        if max_model_len:
            cmd += ["--context-length", str(max_model_len)]
        # Decode workers publish KV events too: the kv router tracks their caches as well.
        if profile.kv_events:
            cmd += ["--kv-events-config", json.dumps(
                {"publisher": "zmq", "topic": "kv-events", "endpoint": f"tcp://*:{kv_port}"})]
        if profile.deterministic:
            cmd += ["--enable-deterministic-inference"]
        if role == "prefill":
            cmd += ["--disaggregation-mode", "prefill", "--disaggregation-transfer-backend",
                    "nixl", "--disaggregation-bootstrap-port", str(bootstrap_port),
                    "--host", "0.0.0.0"]
        elif role == "decode":
            cmd += ["--disaggregation-mode", "decode", "--disaggregation-transfer-backend", "nixl",
                    "--host", "0.0.0.0"]
    else:
        cmd = ["python3", "-m", "dynamo.vllm", "--model", profile.model,
               "--served-model-name", profile.served_name,
               "--tensor-parallel-size", str(grp.tp), "--block-size", "16"]
        if max_model_len:
            cmd += ["--max-model-len", str(max_model_len)]
        if profile.kv_events:
            cmd += ["--kv-events-config", json.dumps(
                {"enable_kv_cache_events": True, "publisher": "zmq",
                 "endpoint": f"tcp://*:{kv_port}"})]
    return cmd + _parser_args(profile) + list(grp.extra_args)


def frontend_command(profile: GpuProfile, port: int) -> list[str]:
    return ["python3", "-m", "dynamo.frontend", "--http-host", "0.0.0.0",
            "--http-port", str(port), "--router-mode", profile.router,
            *profile.frontend_args]


def build_specs(profile: GpuProfile, stack_id: str, ports: StackPorts, *,
                discovery_dir: str, max_model_len: int | None = None) -> list[ContainerSpec]:
    """All containers of the stack in start order: [etcd, nats,] frontend, workers.

    `discovery_dir` is the host folder for file discovery (the caller creates it writable for
    the image's user); `max_model_len` is the engine context length (None: the engine's own).
    """
    labels = {"bankbench.stack": stack_id, "bankbench.profile": profile.name}
    env = discovery_env(profile, ports)
    hf_target = hf_mount_target(profile)
    model_env = {"HF_HOME": hf_target}  # the cache location, whatever HOME the user has
    user = "root" if profile.run_as == "root" else None
    hf = MountSpec(type="bind", source=profile.hf_cache, target=hf_target)
    shared: list[MountSpec] = []
    if profile.discovery == "file":
        shared.append(MountSpec(type="bind", source=discovery_dir, target=DISCOVERY_MOUNT))
    specs: list[ContainerSpec] = []
    if profile.discovery == "etcd":
        etcd_url = f"http://127.0.0.1:{ports.etcd}"
        peer_url = f"http://127.0.0.1:{ports.etcd_peer}"  # a single member, but it listens too
        specs.append(ContainerSpec(
            name=f"{stack_id}-etcd", role="etcd", image=profile.etcd_image,
            command=["etcd", "--name", "default", "--listen-client-urls", etcd_url,
                     "--advertise-client-urls", etcd_url, "--listen-peer-urls", peer_url,
                     "--initial-advertise-peer-urls", peer_url,
                     "--initial-cluster", f"default={peer_url}", "--data-dir", "/tmp/etcd"],
            ports=[ports.etcd, ports.etcd_peer], labels=labels | {"bankbench.component": "etcd"}))
        specs.append(ContainerSpec(
            name=f"{stack_id}-nats", role="nats", image=profile.nats_image,
            command=["-js", "--addr", "127.0.0.1", "-p", str(ports.nats)],
            ports=[ports.nats], labels=labels | {"bankbench.component": "nats"}))
    frontend_name = f"{stack_id}-frontend"
    specs.append(ContainerSpec(
        name=frontend_name, role="frontend", image=profile.image,
        command=frontend_command(profile, ports.frontend), environment=env | model_env,
        pass_env=list(PASS_ENV), mounts=[*shared, hf], ports=[ports.frontend], user=user,
        labels=labels | {"bankbench.component": "frontend"}))
    gpu_sets = assign_gpus(profile)
    stack_gpus = sorted({g for sets in gpu_sets.values() for ids in sets for g in ids})
    index = 0
    for role, grp in profile.groups().items():
        for i, ids in enumerate(gpu_sets[role]):
            name = f"{role}-{i}"
            worker_env = env | model_env | {"DYN_SYSTEM_PORT": str(ports.system[index])}
            if profile.deterministic and profile.engine == "vllm":
                worker_env["VLLM_BATCH_INVARIANT"] = "1"
            bootstrap = ports.bootstrap[i] if role == "prefill" else None
            spec = ContainerSpec(
                name=f"{stack_id}-{name}", role=role, image=profile.image,
                command=worker_command(profile, role, grp, ports.kv_events[index], bootstrap,
                                       max_model_len),
                environment=worker_env, pass_env=list(PASS_ENV),
                device_requests=[DeviceRequestSpec(device_ids=[str(g) for g in ids])],
                mounts=[*shared, hf],
                ports=[p for p in (ports.kv_events[index] if profile.kv_events else None,
                                   ports.system[index], bootstrap) if p is not None],
                ipc_mode="host", user=user, cap_add=["SYS_PTRACE"], ulimits=dict(WORKER_ULIMITS),
                labels=labels | {"bankbench.component": name})
            if profile.disaggregated:
                # NIXL over UCX cuda_ipc: one PID namespace, every GPU of the stack visible,
                # each worker choosing its own (container indices follow PCI bus order).
                spec.pid_mode = f"container:{frontend_name}"
                spec.device_requests = [DeviceRequestSpec(
                    device_ids=[str(g) for g in stack_gpus])]
                spec.environment |= {
                    "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
                    "CUDA_VISIBLE_DEVICES": ",".join(str(stack_gpus.index(g)) for g in ids)}
            specs.append(spec)
            index += 1
    return specs
