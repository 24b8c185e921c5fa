"""Which installer builds the Dynamo venv: uv when set-up put one on the machine, pip otherwise
or when BANKBENCH_INSTALLER=pip asks for it. (The real build runs in the cpu-tiny and cpu-mocker
tests whenever the cache is empty.)"""

from __future__ import annotations

from pathlib import Path

from bankbench.serve import dynamo_venv


def test_uv_builds_the_venv_seeded_with_pip_when_there_is_one(tmp_path, monkeypatch):
    monkeypatch.delenv("BANKBENCH_INSTALLER", raising=False)
    monkeypatch.setattr(dynamo_venv.shutil, "which", lambda name: f"/opt/bin/{name}")
    make, install, tool = dynamo_venv._installers(tmp_path / "v")
    assert tool == "uv"
    assert make[:2] == ["/opt/bin/uv", "venv"] and "--seed" in make  # later pip installs need pip
    assert install[:3] == ["/opt/bin/uv", "pip", "install"]
    assert install[install.index("--python") + 1] == str(tmp_path / "v" / "bin" / "python")


def test_pip_when_asked_or_when_no_uv_is_found(tmp_path, monkeypatch):
    monkeypatch.setenv("BANKBENCH_INSTALLER", "pip")
    monkeypatch.setattr(dynamo_venv.shutil, "which", lambda name: f"/opt/bin/{name}")
    assert dynamo_venv._installers(tmp_path / "v")[2] == "pip"

    monkeypatch.delenv("BANKBENCH_INSTALLER")
    monkeypatch.setattr(dynamo_venv.shutil, "which", lambda name: None)
    monkeypatch.setattr(dynamo_venv.Path, "home", lambda: tmp_path)  # no ~/.local/bin/uv
    make, install, tool = dynamo_venv._installers(tmp_path / "v")
    assert tool == "pip"
    assert make[1:3] == ["-m", "venv"]
    assert install == [str(Path(tmp_path / "v" / "bin" / "python")), "-m", "pip", "install",
                       "--quiet"]
