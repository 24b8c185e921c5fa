"""`source scripts/bootstrap.sh`, as the README tells a user to type it: bankbench and harbor
on PATH afterwards, and the caller's shell options untouched (errexit left on would close an
interactive shell at its next failing command)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _shell(script: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", script], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def test_sourcing_leaves_the_shell_options_and_puts_the_commands_on_path():
    done = _shell("set +euo pipefail; source scripts/bootstrap.sh; echo rc=$?; "
                  "set -o | grep -E '^(errexit|nounset|pipefail)'; "
                  "command -v bankbench; command -v harbor; false; echo alive")
    out = done.stdout
    assert "rc=0" in out, done.stderr[-2000:]
    options = dict(line.split() for line in out.splitlines()
                   if line.startswith(("errexit", "nounset", "pipefail")))
    assert options == {"errexit": "off", "nounset": "off", "pipefail": "off"}, out
    assert str(ROOT / ".venv" / "bin" / "bankbench") in out
    assert str(ROOT / ".venv" / "bin" / "harbor") in out
    assert out.rstrip().endswith("alive")


def test_a_strict_script_keeps_its_own_strict_mode():
    done = _shell("set -euo pipefail; source scripts/bootstrap.sh; set -o | grep -E "
                  "'^(errexit|pipefail)'")
    assert done.returncode == 0, done.stderr[-2000:]
    assert [line.split() for line in done.stdout.splitlines()] == [
        ["errexit", "on"], ["pipefail", "on"]]



def test_a_uv_installed_by_pip_user_is_found_without_installing_it_again():
    # A fresh login shell often lacks ~/.local/bin on PATH: an earlier `pip install --user uv`
    # must be found there, not repeated on every run.
    local_bin = Path.home() / ".local" / "bin"
    path = [p for p in os.environ["PATH"].split(":") if p and Path(p) != local_bin]
    if not (local_bin / "uv").exists() or any((Path(p) / "uv").exists() for p in path):
        pytest.skip("needs a uv in ~/.local/bin and none elsewhere on PATH")
    done = _shell(f"export PATH='{':'.join(path)}'; source scripts/bootstrap.sh; echo rc=$?; "
                  "command -v uv")
    assert "rc=0" in done.stdout, done.stderr[-2000:]
    assert "installing uv" not in done.stderr
    # and the caller's shell finds it afterwards (the README's `uv run …`)
    assert str(local_bin / "uv") in done.stdout
