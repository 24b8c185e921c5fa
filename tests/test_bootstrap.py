"""`source scripts/bootstrap.sh`, as the README tells a user to type it: bankbench and harbor
on PATH afterwards, and the caller's shell options untouched (errexit left on would close an
interactive shell at its next failing command)."""

from __future__ import annotations

import subprocess
from pathlib import Path

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
