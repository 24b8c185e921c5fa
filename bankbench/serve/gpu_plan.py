"""A GPU stack planned before anything starts: its ports, context length, host folders and
container specs — what `serve up` runs and what `serve up --dry-run` prints as `docker run`
command lines (the same specs, so the printed commands are the ones that would run)."""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field

from bankbench.procs import port_is_free
from bankbench.serve import model_fit
from bankbench.serve.containers import (
    PASS_ENV,
    ContainerSpec,
    StackPorts,
    build_specs,
    plan_ports,
)
from bankbench.serve.errors import ServeError
from bankbench.serve.gpu_profiles import GpuProfile


class StackPlan(BaseModel):
    profile: GpuProfile
    stack_id: str
    ports: StackPorts
    host_dirs: list[Path] = Field(description="created before the start (bind sources)")
    world_writable: list[Path] = Field(default_factory=list, description="chmod 0777 ones")
    max_model_len: int | None = None
    notes: list[str] = Field(default_factory=list)
    specs: list[ContainerSpec]


def host_port_free(port: int) -> bool:
    # Host networking: a port is free only if nothing listens on any address.
    return port_is_free(port, "0.0.0.0")


def resolve_context(profile: GpuProfile, *, strict: bool) -> tuple[int | None, str]:
    """(max_model_len, note). `auto` sizes it from GPU memory and the model's files; without
    what it needs it raises (strict, a real start) or leaves the engine default (dry run)."""
    if profile.max_model_len != "auto":
        return profile.max_model_len, ""
    groups = list(profile.groups().values())
    tp = min(g.tp for g in groups)
    try:
        if profile.gpu_memory_gib is not None:
            gpu_bytes = int(profile.gpu_memory_gib * model_fit.GiB)
            where = f"{profile.gpu_memory_gib:g} GiB per GPU (gpu_memory_gib)"
        else:
            found = model_fit.gpus()
            if not found:
                raise model_fit.FitError("no NVIDIA GPU found (nvidia-smi)")
            smallest = min(found, key=lambda g: g.memory_mib)
            gpu_bytes = smallest.memory_mib * 1024**2
            where = f"{smallest.memory_mib / 1024:.0f} GiB per GPU ({smallest.name})"
        token = os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN")
        shape = model_fit.model_shape(profile.model, Path(profile.hf_cache), token, fetch=strict)
        length = model_fit.fit_context(shape, gpu_bytes, tp)
    except model_fit.FitError as exc:
        advice = ("pass --set max_model_len=N (tokens), or --set gpu_memory_gib=G so it can "
                  "be sized")
        if strict:
            raise ServeError(f"{profile.name}: cannot size the context length: {exc}; "
                             f"{advice}") from None
        return None, f"max_model_len=auto not resolved here ({exc}): the engine's default " \
                     f"is used; {advice}"
    note = (f"max_model_len {length} (model max {shape.max_positions}): "
            f"{shape.weight_bytes / model_fit.GiB:.1f} GiB weights, "
            f"{shape.kv_bytes_per_token // 1024} KiB KV per token, {where}, tp {tp}")
    return length, note


def plan_stack(profile: GpuProfile, stack_id: str, state_dir: Path, *, strict: bool,
               is_free: Callable[[int], bool] = host_port_free) -> StackPlan:
    if profile.frontend_port is not None and strict and not is_free(profile.frontend_port):
        raise ServeError(f"port {profile.frontend_port} is busy; pass another --port or omit it")
    ports = plan_ports(profile, is_free, profile.frontend_port)
    max_len, note = resolve_context(profile, strict=strict)
    hf_cache = Path(profile.hf_cache).expanduser()
    # A folder per stack: files the containers' user wrote may outlive a host user's cleanup,
    # and a new stack must never read an old one's registrations.
    discovery = state_dir / "discovery" / stack_id
    specs = build_specs(
        profile.model_copy(update={"hf_cache": str(hf_cache)}), stack_id, ports,
        discovery_dir=str(discovery), max_model_len=max_len)
    return StackPlan(
        profile=profile, stack_id=stack_id, ports=ports, max_model_len=max_len,
        host_dirs=[hf_cache, discovery] if profile.discovery == "file" else [hf_cache],
        world_writable=[discovery.parent, discovery] if profile.discovery == "file" else [],
        notes=[n for n in (note,) if n], specs=specs)


def prepare_host_dirs(plan: StackPlan) -> None:
    """Docker refuses a bind mount whose source is missing; the image's user (UID 1000) must
    be able to write the discovery folder whoever owns it on the host."""
    for folder in plan.host_dirs:
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ServeError(f"cannot create {folder} for the containers: {exc}") from None
    for folder in plan.world_writable:
        folder.chmod(0o777)


def docker_run_argv(spec: ContainerSpec) -> list[str]:
    """The `docker run` command line equivalent to `gpu.run_kwargs(spec)`."""
    argv = ["docker", "run", "-d", "--name", spec.name]
    for key, value in spec.labels.items():
        argv += ["--label", f"{key}={value}"]
    argv += ["--network", spec.network_mode]
    if spec.ipc_mode:
        argv += ["--ipc", spec.ipc_mode]
    if spec.pid_mode:
        argv += ["--pid", spec.pid_mode]
    if spec.shm_size:
        argv += ["--shm-size", spec.shm_size]
    if spec.user:
        argv += ["--user", spec.user]
    for cap in spec.cap_add:
        argv += ["--cap-add", cap]
    for name, (soft, hard) in spec.ulimits.items():
        argv += ["--ulimit", f"{name}={soft}" if soft == hard else f"{name}={soft}:{hard}"]
    for req in spec.device_requests:
        argv += ["--gpus", f'"device={",".join(req.device_ids)}"']
    for key, value in spec.environment.items():
        argv += ["-e", f"{key}={value}"]
    for var in spec.pass_env:
        argv += ["-e", var]  # by name: docker copies it from your shell if set
    for m in spec.mounts:
        suffix = ":ro" if m.read_only else ""
        argv += ["-v", f"{m.source}:{m.target}{suffix}"]
    return [*argv, spec.image, *spec.command]


def format_command(argv: list[str], image: str) -> str:
    """One shell command over several lines: each docker option on its own, then the image
    and the container's command (re-joined by the shell exactly as `shlex.join(argv)`)."""
    cut = argv.index(image)
    lines, current = [], shlex.join(argv[:2])  # docker run
    for arg in argv[2:cut]:
        if arg.startswith("-") and current:
            lines.append(current)
            current = shlex.quote(arg)
        else:
            current += " " + shlex.quote(arg)
    lines += [current, shlex.join(argv[cut:])]
    return " \\\n    ".join(lines)


def render_dry_run(plan: StackPlan) -> str:
    """Pasteable shell text: the host folders, then each `docker run` in start order."""
    lines = [f"# {plan.profile.name}: {len(plan.specs)} containers, stack {plan.stack_id}",
             f"# frontend: http://127.0.0.1:{plan.ports.frontend}/v1  model: "
             f"{plan.profile.served_name}",
             f"# forwarded from your environment by name when set: {', '.join(PASS_ENV)}"]
    lines += [f"# {n}" for n in plan.notes]
    lines.append(shlex.join(["mkdir", "-p", *map(str, plan.host_dirs)]))
    if plan.world_writable:
        lines.append(shlex.join(["chmod", "0777", *map(str, plan.world_writable)]))
    for spec in plan.specs:
        lines.append(f"\n# {spec.labels.get('bankbench.component', spec.role)}")
        lines.append(format_command(docker_run_argv(spec), spec.image))
    return "\n".join(lines) + "\n"
