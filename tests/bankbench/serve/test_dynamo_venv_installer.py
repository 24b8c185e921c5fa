"""Which installer builds the Dynamo venv: uv when set-up put one on the machine, pip otherwise
or when BANKBENCH_INSTALLER=pip asks for it, and its packages compiled to bytecode. (The real
build runs in the cpu-tiny and cpu-mocker tests whenever the cache is empty.)"""

from __future__ import annotations

import sys
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


def test_uv_compiles_the_packages_it_installs(tmp_path, monkeypatch):
    monkeypatch.delenv("BANKBENCH_INSTALLER", raising=False)
    monkeypatch.setattr(dynamo_venv.shutil, "which", lambda name: f"/opt/bin/{name}")
    assert "--compile-bytecode" in dynamo_venv._installers(tmp_path / "v")[1]


def test_a_venv_made_without_bytecode_is_compiled_once(tmp_path, monkeypatch):
    """A finished venv from before its packages were compiled (or built where uv was told not
    to) gets them compiled on the next use, once."""
    venv = tmp_path / f"dynamo-venv-{dynamo_venv.DYNAMO_VERSION}"
    module = venv / "lib" / "python3" / "site-packages" / "dynamo_like.py"
    module.parent.mkdir(parents=True)
    module.write_text("X = 1\n")
    (venv / "bin").mkdir()
    (venv / "bin" / "python").symlink_to(sys.executable)
    (venv / dynamo_venv._DONE_MARKER).write_text(dynamo_venv.DYNAMO_VERSION + "\n")
    monkeypatch.setattr(dynamo_venv, "cache_dir", lambda: tmp_path)
    runs = []
    real_run = dynamo_venv.subprocess.run
    monkeypatch.setattr(dynamo_venv.subprocess, "run",
                        lambda cmd, **kw: runs.append(cmd) or real_run(cmd, **kw))

    assert dynamo_venv.ensure_dynamo_venv(progress=False) == venv / "bin" / "python"
    assert list((module.parent / "__pycache__").glob("dynamo_like.*.pyc"))
    assert dynamo_venv.ensure_dynamo_venv(progress=False) == venv / "bin" / "python"
    assert len(runs) == 1 and runs[0][1:3] == ["-m", "compileall"]
