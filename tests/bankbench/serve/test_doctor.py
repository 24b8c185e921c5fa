"""`bankbench serve doctor`: a clear answer on a host without GPU/Docker (like the one this
suite runs on), and the checks a GPU host gets (with nvidia-smi and the engine faked)."""

import os
import subprocess
import sys

import pytest

from bankbench.serve import doctor, model_fit
from bankbench.serve.gpu_profiles import load_profile


def gpu(index=0, driver="580.65.06", mib=81559):
    return model_fit.GpuInfo(index=index, name="NVIDIA H100", memory_mib=mib, driver=driver)


class FakeImages:
    def get(self, image):
        raise LookupError(image)


class FakeClient:
    images = FakeImages()

    def __init__(self, runtimes):
        self.runtimes = runtimes

    def info(self):
        return {"ServerVersion": "27.3.1", "DockerRootDir": "/", "Runtimes": self.runtimes}


def by_check(findings):
    return {f.check: f for f in findings}


def test_host_without_gpu_or_docker_gets_one_clear_answer(tmp_path):
    env = dict(os.environ, DOCKER_HOST=f"unix://{tmp_path}/none.sock",
               PATH=f"{tmp_path}:{os.path.dirname(sys.executable)}:/usr/bin:/bin")
    proc = subprocess.run([sys.executable, "-m", "bankbench", "serve", "doctor"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 1
    assert "[FAIL] NVIDIA driver: nvidia-smi not found" in proc.stdout
    assert "[FAIL] Docker engine: not reachable" in proc.stdout
    assert proc.stdout.strip().splitlines()[-1].startswith(
        "this host has neither an NVIDIA driver nor a Docker engine")
    assert "cpu-mocker" in proc.stdout.splitlines()[-1] and proc.stderr == ""


@pytest.mark.parametrize(("driver", "ok"), [("575.57.08", False), ("580.65.06", True)])
def test_driver_older_than_580_is_refused(monkeypatch, driver, ok):
    # Row 7: the 1.6.x runtime images are CUDA 13 only (driver >= 580).
    monkeypatch.setattr(model_fit, "gpus", lambda: [gpu(driver=driver)])
    f = by_check(doctor.diagnose(load_profile("gpu-sglang")))["NVIDIA driver"]
    assert f.ok is ok
    assert ("580" in f.detail) and (ok or "older than 580" in f.detail)


def test_gpu_host_checks_gpus_toolkit_image_and_cache_owner(monkeypatch, tmp_path):
    import docker

    monkeypatch.setattr(model_fit, "gpus", lambda: [gpu(0)])
    monkeypatch.setattr(docker, "from_env", lambda: FakeClient({"runc": {}}))
    monkeypatch.setattr(doctor, "CDI_SPECS", ())
    monkeypatch.setattr(doctor.shutil, "which", lambda name: None)
    hf = tmp_path / "hf"
    hf.mkdir(mode=0o755)
    profile = load_profile("gpu-sglang-disagg", {"hf_cache": str(hf)})  # GPUs 0 and 1
    found = by_check(doctor.diagnose(profile))
    gpus = found["GPUs for the profile"]
    assert gpus.ok is False and "[1]" in gpus.detail
    assert found["NVIDIA container toolkit"].ok is False
    assert "nvidia-ctk runtime configure" in found["NVIDIA container toolkit"].detail
    image = found[f"image {profile.image}"]
    assert image.ok is None and "pulls it (~20-30 GB)" in image.detail
    assert "not in" in found["model"].detail
    if os.getuid() != doctor.IMAGE_UID:
        assert found["cache owner"].ok is False and "run_as=root" in found["cache owner"].detail
    verdict = doctor.verdict(profile, list(found.values()))
    assert verdict.startswith("not ready for gpu-sglang-disagg")
    assert "NVIDIA container toolkit" in verdict


def test_ready_host(monkeypatch, tmp_path):
    import docker

    monkeypatch.setattr(model_fit, "gpus", lambda: [gpu(0)])
    monkeypatch.setattr(docker, "from_env", lambda: FakeClient({"nvidia": {}}))
    usage = type("Usage", (), {"free": 500e9})
    monkeypatch.setattr(doctor.shutil, "disk_usage", lambda path: usage)
    hf = tmp_path / "hf"
    hf.mkdir()
    hf.chmod(0o777)
    findings = doctor.diagnose(load_profile("gpu-vllm", {"hf_cache": str(hf),
                                                         "max_model_len": "8192"}))
    assert [f.check for f in findings if f.ok is False] == []
    assert doctor.verdict(load_profile("gpu-vllm"), findings).startswith("ready")
