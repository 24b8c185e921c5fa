"""sweep.json's `versions`: this side's packages plus what the launched server runs."""

from pathlib import Path

from bankbench.serve.dynamo_venv import installed_versions
from bankbench.sweep.provenance import versions


def _fake_venv(root: Path, packages: dict[str, str]) -> Path:
    site = root / "lib" / "python3.12" / "site-packages"
    for name, version in packages.items():
        info = site / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (root / "bin").mkdir(parents=True)
    return root / "bin" / "python"


def test_installed_versions_are_read_from_the_servers_venv(tmp_path):
    python = _fake_venv(tmp_path / "venv", {"ai-dynamo": "9.8.7"})
    assert installed_versions(python) == {"ai-dynamo": "9.8.7"}
    # A package the venv lacks is left out, not filled with what we meant to install.
    assert installed_versions(python, ("ai-dynamo", "llama-cpp-python")) == {"ai-dynamo": "9.8.7"}


def test_versions_take_the_servers_and_never_guess():
    launched = versions({"ai-dynamo": "9.8.7", "llama-cpp-python": "0.3.36"})
    assert launched["ai-dynamo"] == "9.8.7" and launched["llama-cpp-python"] == "0.3.36"
    assert {"bankbench", "harbor"} <= set(launched)
    assert versions(None)["ai-dynamo"] is None  # --base-url: the server told nothing
