"""Start and stop GPU profiles with the docker SDK (the plan comes from `gpu_plan`)."""

from __future__ import annotations

import os
import secrets
import sys
import time
from pathlib import Path

from bankbench.serve.base import ComponentStatus, StartRequest
from bankbench.serve.containers import ContainerSpec
from bankbench.serve.errors import ServeError
from bankbench.serve.gpu_plan import StackPlan, plan_stack, prepare_host_dirs, render_dry_run
from bankbench.serve.gpu_profiles import GpuProfile, load_profile
from bankbench.serve.local_stack import wait_ready
from bankbench.serve.state import Component, ServerState, save_state


def _client():
    import docker

    try:
        client = docker.from_env()
        client.ping()
    except Exception as exc:  # the SDK raises several unrelated types for "no engine"
        raise ServeError(
            f"Docker engine not reachable ({type(exc).__name__}); GPU profiles need Docker "
            "with the NVIDIA container toolkit"
        ) from None
    return client


def run_kwargs(spec: ContainerSpec) -> dict:
    """docker SDK `containers.run` arguments for a spec (host env forwarded by name only)."""
    import docker

    env = dict(spec.environment)
    for var in spec.pass_env:
        if os.environ.get(var):
            env[var] = os.environ[var]
    mounts = [
        docker.types.Mount(
            target=m.target,
            source=str(Path(m.source).expanduser()) if m.type == "bind" else m.source,
            type=m.type, read_only=m.read_only)
        for m in spec.mounts
    ]
    kwargs: dict = dict(
        image=spec.image, command=spec.command, name=spec.name, detach=True,
        environment=env, labels=spec.labels, network_mode=spec.network_mode, mounts=mounts,
        device_requests=[
            docker.types.DeviceRequest(driver=d.driver, device_ids=d.device_ids,
                                       capabilities=d.capabilities)
            for d in spec.device_requests
        ],
    )
    if spec.ipc_mode:
        kwargs["ipc_mode"] = spec.ipc_mode
    if spec.pid_mode:
        kwargs["pid_mode"] = spec.pid_mode
    if spec.shm_size:
        kwargs["shm_size"] = spec.shm_size
    if spec.user:
        kwargs["user"] = spec.user
    if spec.cap_add:
        kwargs["cap_add"] = list(spec.cap_add)
    if spec.ulimits:
        kwargs["ulimits"] = [docker.types.Ulimit(name=n, soft=soft, hard=hard)
                             for n, (soft, hard) in spec.ulimits.items()]
    return kwargs


def profile_with_overrides(profile_name: str, *, router: str | None, workers: int | None,
                           port: int | None, model: str | None, options: dict) -> GpuProfile:
    """The profile's YAML with the CLI's flags and --set values applied, validated."""
    overrides = dict(options)
    if router is not None:
        overrides["router"] = router
    if model is not None:
        overrides["model"] = model
    if workers is not None:
        overrides["decode.workers" if "disagg" in profile_name else "worker.workers"] = workers
    if port is not None:
        overrides["frontend_port"] = port
    return load_profile(profile_name, overrides)


def new_plan(profile: GpuProfile, state_dir: Path, *, strict: bool) -> StackPlan:
    stack_id = f"bankbench-{profile.name}-{secrets.token_hex(3)}"
    return plan_stack(profile, stack_id, state_dir, strict=strict)


def pull_missing(client, images: list[str], out=None, every_s: float = 5.0) -> None:
    """Pull the images not present locally, printing progress (they are 20–30 GB)."""
    import docker

    out = out or sys.stderr
    for image in dict.fromkeys(images):
        try:
            client.images.get(image)
            continue
        except docker.errors.ImageNotFound:
            pass
        print(f"bankbench: pulling {image} (not on this host; the runtime images are "
              "20-30 GB) ...", file=out, flush=True)
        repo, _, tag = image.rpartition(":") if ":" in image.split("/")[-1] else (image, "", "")
        layers: dict[str, tuple[int, int]] = {}
        last = 0.0
        try:
            for event in client.api.pull(repo, tag=tag or "latest", stream=True, decode=True):
                if "error" in event:
                    raise ServeError(f"pulling {image} failed: {event['error']}")
                detail = event.get("progressDetail") or {}
                if event.get("id") and detail.get("total"):
                    layers[event["id"]] = (detail.get("current", 0), detail["total"])
                if time.monotonic() - last >= every_s and layers:
                    done = sum(c for c, _ in layers.values()) / 1e9
                    total = sum(t for _, t in layers.values()) / 1e9
                    print(f"bankbench: {image}: {done:.1f} / {total:.1f} GB of the layers "
                          f"started so far", file=out, flush=True)
                    last = time.monotonic()
        except docker.errors.APIError as exc:
            raise ServeError(f"pulling {image} failed: {exc.explanation or exc}") from None
        print(f"bankbench: pulled {image}", file=out, flush=True)


def start_gpu(profile_name: str, *, router: str | None, workers: int | None, port: int | None,
              model: str | None, options: dict, state_dir: Path) -> ServerState:
    profile = profile_with_overrides(profile_name, router=router, workers=workers, port=port,
                                     model=model, options=options)
    client = _client()
    plan = new_plan(profile, state_dir, strict=True)
    for note in plan.notes:
        print(f"bankbench: {note}", file=sys.stderr, flush=True)
    prepare_host_dirs(plan)
    pull_missing(client, [s.image for s in plan.specs])
    state = ServerState(
        profile=profile_name, base_url=f"http://127.0.0.1:{plan.ports.frontend}/v1",
        model=profile.served_name, router=profile.router,
        workers=sum(g.workers for g in profile.groups().values()),
        state_dir=state_dir, options=profile.model_dump(mode="json"),
    )
    try:
        for spec in plan.specs:
            print(f"bankbench: starting container {spec.name} ({spec.image})", flush=True)
            container = client.containers.run(**run_kwargs(spec))
            state.components.append(Component(
                name=spec.labels["bankbench.component"], kind="container",
                container_id=container.id, command=spec.command))
            save_state(state)
        # Decode workers are the ones the frontend routes to in a disaggregated stack.
        expected = (profile.decode.workers if profile.disaggregated else profile.worker.workers)
        wait_ready(state, expected, profile.start_timeout_s, failure=_first_failure,
                   tails=container_tails)
    except BaseException:
        stop_containers(state)
        raise
    save_state(state)
    return state


def container_logs(container_id: str, lines: int = 40) -> str:
    import docker

    try:
        c = docker.from_env().containers.get(container_id)
        return c.logs(tail=lines).decode(errors="replace")
    except Exception as exc:
        return f"(logs unavailable: {type(exc).__name__})"


def container_failure(profile: str, comp: Component) -> ServeError | None:
    """ServeError when a stack container has exited during start, else None."""
    import docker

    try:
        c = docker.from_env().containers.get(comp.container_id)
    except Exception:
        return ServeError(f"{profile}: container {comp.name} disappeared during start")
    if c.status not in ("exited", "dead"):
        return None
    code = c.attrs.get("State", {}).get("ExitCode")
    logs = container_logs(comp.container_id or "", 25)
    last = (logs.strip().splitlines() or ["no output"])[-1][:200]
    return ServeError(f"{profile}: {comp.name} exited during start (exit code {code}): {last}",
                      logs, comp.name)


def container_tails(state: ServerState, lines: int = 15) -> tuple[str, str]:
    """The last lines of every container's own log, each under its name."""
    parts = [f"== {c.name} ==\n{container_logs(c.container_id or '', lines).rstrip()}"
             for c in state.components if c.kind == "container"]
    return "\n".join(parts), "containers"


def _first_failure(state: ServerState) -> ServeError | None:
    for comp in state.components:
        if comp.kind == "container" and comp.container_id is not None:
            failure = container_failure(state.profile, comp)
            if failure is not None:
                return failure
    return None


def stop_containers(state: ServerState, timeout: int = 20) -> None:
    """Stop and remove this stack's containers (by id, workers first) and any volume."""
    import docker

    try:
        client = docker.from_env()
    except Exception:
        return
    volumes = set()
    for comp in reversed(state.components):
        if comp.kind != "container" or comp.container_id is None:
            continue
        try:
            c = client.containers.get(comp.container_id)
            volumes |= {m["Name"] for m in c.attrs.get("Mounts", []) if m.get("Type") == "volume"}
            c.stop(timeout=timeout)
            c.remove(force=True)
        except docker.errors.NotFound:
            pass
    for name in volumes:
        try:
            client.volumes.get(name).remove(force=True)
        except Exception:
            pass


def container_status(state: ServerState) -> list[ComponentStatus]:
    """Liveness of the container components; None for each when the engine cannot be asked."""
    try:
        import docker

        client = docker.from_env()
        client.ping()
    except Exception:
        return [ComponentStatus(name=c.name, alive=None, container_id=c.container_id)
                for c in state.components if c.kind == "container"]
    out = []
    for c in state.components:
        if c.kind != "container":
            continue
        try:
            alive = client.containers.get(c.container_id).status in ("created", "running")
        except docker.errors.NotFound:
            alive = False
        except Exception:
            alive = None
        out.append(ComponentStatus(name=c.name, alive=alive, container_id=c.container_id))
    return out


class GpuStack:
    """A GPU profile (dynamo/profiles/<name>.yaml) run as containers with the docker SDK."""

    launches = True

    def __init__(self, name: str, summary: str) -> None:
        self.name = name
        self.summary = summary

    def check(self, req: StartRequest) -> None:
        profile_with_overrides(self.name, router=req.router, workers=req.workers, port=None,
                               model=req.model, options=req.options)

    def start(self, req: StartRequest, state_dir: Path) -> ServerState:
        return start_gpu(self.name, router=req.router, workers=req.workers, port=req.port,
                         model=req.model, options=req.options, state_dir=state_dir)

    def dry_run(self, req: StartRequest, state_dir: Path) -> str:
        profile = profile_with_overrides(self.name, router=req.router, workers=req.workers,
                                         port=req.port, model=req.model, options=req.options)
        return render_dry_run(new_plan(profile, state_dir, strict=False))

    def stop(self, state: ServerState) -> None:
        stop_containers(state)

    def alive(self, state: ServerState) -> list[ComponentStatus]:
        return container_status(state)
