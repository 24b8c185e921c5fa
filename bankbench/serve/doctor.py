"""`bankbench serve doctor`: can this host start a GPU profile, and what will the first start
download? Checks the NVIDIA driver (≥ 580: the Dynamo 1.6.x images are CUDA 13), the GPUs the
profile asks for, the Docker engine and NVIDIA container toolkit, the image, free ports, the
model in the Hugging Face cache, disk space and the cache's owner. Starts nothing."""

from __future__ import annotations

import glob
import os
import shutil
from pathlib import Path

from pydantic import BaseModel

from bankbench.serve import model_fit
from bankbench.serve.containers import IMAGE_UID, assign_gpus, plan_ports
from bankbench.serve.gpu_plan import host_port_free, resolve_context
from bankbench.serve.gpu_profiles import GpuProfile

MIN_DRIVER = 580  # CUDA 13.0's minimum Linux driver branch
IMAGE_GB = "20-30"  # size of an ai-dynamo runtime image to pull
CDI_SPECS = ("/etc/cdi/nvidia*.yaml", "/var/run/cdi/nvidia*.yaml")


class Finding(BaseModel):
    check: str
    ok: bool | None  # None: information, not a problem
    detail: str


def _driver(found: list[model_fit.GpuInfo]) -> Finding:
    if not found:
        return Finding(check="NVIDIA driver", ok=False,
                       detail="nvidia-smi not found or no GPU: install an NVIDIA driver "
                       f">= {MIN_DRIVER} (the Dynamo 1.6.x images are CUDA 13)")
    major = int(found[0].driver.split(".")[0])
    gpus = ", ".join(f"{g.index}: {g.name} {g.memory_mib / 1024:.0f} GiB" for g in found)
    if major < MIN_DRIVER:
        return Finding(check="NVIDIA driver", ok=False,
                       detail=f"driver {found[0].driver} is older than {MIN_DRIVER}: the CUDA 13 "
                       f"images fail to start on it; upgrade the driver ({gpus})")
    return Finding(check="NVIDIA driver", ok=True, detail=f"driver {found[0].driver}; {gpus}")


def _gpus_for_profile(profile: GpuProfile, found: list[model_fit.GpuInfo]) -> Finding:
    wanted = sorted({g for sets in assign_gpus(profile).values() for ids in sets for g in ids})
    have = {g.index for g in found}
    missing = [g for g in wanted if g not in have]
    if found and missing:
        return Finding(check="GPUs for the profile", ok=False,
                       detail=f"{profile.name} uses GPUs {wanted}; this host has no "
                       f"{missing}: set worker.gpus / prefill.gpus / decode.gpus or tp")
    return Finding(check="GPUs for the profile", ok=None if not found else True,
                   detail=f"{profile.name} uses GPUs {wanted}")


def _docker(profile: GpuProfile) -> list[Finding]:
    try:
        import docker

        client = docker.from_env()
        info = client.info()
    except Exception as exc:  # the SDK raises several unrelated types for "no engine"
        where = os.environ.get("DOCKER_HOST") or "the default socket"
        return [Finding(check="Docker engine", ok=False,
                        detail=f"not reachable at {where} ({type(exc).__name__}): install "
                        "Docker (or Podman's Docker API) and start it")]
    out = [Finding(check="Docker engine", ok=True,
                   detail=f"{info.get('ServerVersion', '?')} at {info.get('DockerRootDir')}")]
    runtimes = set((info.get("Runtimes") or {}).keys())
    cdi = [p for pattern in CDI_SPECS for p in glob.glob(pattern)]
    if "nvidia" in runtimes or cdi or shutil.which("nvidia-ctk"):
        out.append(Finding(check="NVIDIA container toolkit", ok=True,
                           detail="nvidia runtime" if "nvidia" in runtimes else
                           (f"CDI spec {cdi[0]}" if cdi else "nvidia-ctk on PATH")))
    else:
        out.append(Finding(check="NVIDIA container toolkit", ok=False,
                           detail="no nvidia runtime or CDI spec: install "
                           "nvidia-container-toolkit, then `sudo nvidia-ctk runtime configure "
                           "--runtime=docker` and restart Docker"))
    images = [profile.image] + ([profile.etcd_image, profile.nats_image]
                                if profile.discovery == "etcd" else [])
    for image in images:
        try:
            size = client.images.get(image).attrs.get("Size", 0) / 1e9
            out.append(Finding(check=f"image {image}", ok=True, detail=f"present ({size:.1f} GB)"))
        except Exception:
            big = f"~{IMAGE_GB} GB" if image == profile.image else "small"
            out.append(Finding(check=f"image {image}", ok=None,
                               detail=f"not present: the first start pulls it ({big})"))
    root = info.get("DockerRootDir")
    if root and Path(root).exists():
        free = shutil.disk_usage(root).free / 1e9
        out.append(Finding(check="disk for images", ok=free > 40 or None,
                           detail=f"{free:.0f} GB free at {root}"))
    return out


def _existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _model(profile: GpuProfile) -> list[Finding]:
    hf = Path(profile.hf_cache).expanduser()
    snap = model_fit.snapshot_dir(hf, profile.model)
    free = shutil.disk_usage(_existing(hf)).free / 1e9
    if snap is not None:
        out = [Finding(check="model", ok=True, detail=f"{profile.model} is in {hf}")]
    else:
        out = [Finding(check="model", ok=None,
                       detail=f"{profile.model} is not in {hf}: the first start downloads it "
                       f"there (set HF_TOKEN for gated models); {free:.0f} GB free")]
        if free < 40:
            out.append(Finding(check="disk for the model", ok=False,
                               detail=f"only {free:.0f} GB free at {_existing(hf)}"))
    if profile.run_as == "image" and hf.exists():
        st = hf.stat()
        if st.st_uid != IMAGE_UID and not st.st_mode & 0o002:
            out.append(Finding(
                check="cache owner", ok=False,
                detail=f"{hf} belongs to UID {st.st_uid}; the containers run as UID "
                f"{IMAGE_UID} (user dynamo) and cannot write it: `sudo chown -R {IMAGE_UID} "
                f"{hf}`, --set hf_cache=<a folder UID {IMAGE_UID} owns>, or --set run_as=root"))
    return out


def diagnose(profile: GpuProfile) -> list[Finding]:
    found = model_fit.gpus()
    findings = [_driver(found), _gpus_for_profile(profile, found), *_docker(profile)]
    ports = plan_ports(profile, host_port_free)
    if profile.frontend_port is not None and not host_port_free(profile.frontend_port):
        findings.append(Finding(check="ports", ok=False,
                                detail=f"frontend port {profile.frontend_port} is busy"))
    else:
        findings.append(Finding(check="ports", ok=True,
                                detail=f"free now: frontend {ports.frontend}, KV events "
                                f"{ports.kv_events}, system {ports.system}"
                                + (f", bootstrap {ports.bootstrap}" if ports.bootstrap else "")))
    findings += _model(profile)
    if found:
        length, note = resolve_context(profile, strict=False)
        if note:
            findings.append(Finding(check="context length", ok=None, detail=note))
    return findings


def verdict(profile: GpuProfile, findings: list[Finding]) -> str:
    failed = [f.check for f in findings if f.ok is False]
    if not failed:
        return f"ready: `bankbench serve up --profile {profile.name}` should start here"
    no_gpu = any(f.check == "NVIDIA driver" and f.ok is False and "not found" in f.detail
                 for f in findings)
    no_docker = any(f.check == "Docker engine" and f.ok is False for f in findings)
    if no_gpu and no_docker:
        return ("this host has neither an NVIDIA driver nor a Docker engine, so the GPU "
                "profiles cannot run here; the CPU profiles can: `bankbench serve up "
                "--profile cpu-mocker` (or cpu-tiny)")
    return f"not ready for {profile.name}: fix {', '.join(failed)} (details above)"
