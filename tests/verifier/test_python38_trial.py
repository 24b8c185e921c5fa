"""A whole trial on the oldest Python the task environment may have: bank calls, then scoring."""

from __future__ import annotations

import glob
import os
import subprocess

import pytest
from verifier_harness import BANK_FIXTURES, BANK_SCRIPT, Trial


def find_python38() -> str | None:
    """$BANKBENCH_PYTHON38, else a pyenv 3.8, else python3.8 on PATH (only if it runs)."""
    candidates = [os.environ.get("BANKBENCH_PYTHON38", "")]
    pyenv_root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    candidates += sorted(glob.glob(f"{pyenv_root}/versions/3.8*/bin/python3.8"), reverse=True)
    candidates.append("python3.8")
    for candidate in filter(None, candidates):
        try:
            done = subprocess.run(
                [candidate, "-c", "import sys; print(sys.version_info[:2])"],
                capture_output=True,
                text=True,
                timeout=30,
            )
        except OSError:
            continue
        if done.returncode == 0 and done.stdout.strip() == "(3, 8)":
            return candidate
    return None


PYTHON38 = find_python38()
pytestmark = pytest.mark.skipif(PYTHON38 is None, reason="no Python 3.8 interpreter found")


def test_bank_and_verifier_run_on_python38(trial: Trial) -> None:
    assert PYTHON38 is not None
    env = dict(os.environ, BANK_DIR=str(BANK_FIXTURES), BANK_INTENTS=str(trial.intents))

    def bank(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [PYTHON38, str(BANK_SCRIPT), *argv], env=env, capture_output=True, text=True, timeout=60
        )

    assert bank("tools").returncode == 0
    ok = bank(
        "call",
        "transfer_funds",
        '{"from_account": "1", "to_account": "2", "amount": 5, "memo": {"text": "rent"}}',
    )
    assert ok.returncode == 0, ok.stderr
    assert bank("call", "get_account_balance", '{"account_number": 1}').returncode == 2
    assert bank("call", "get_acount_balance", "{}").returncode == 2
    assert bank("call", "get_account_balance", "{bad").returncode == 2
    assert bank("accept", "1").returncode == 0

    outcome = trial.verify(python=PYTHON38)
    assert outcome.details["intents"]["n_calls"] == 4
    assert outcome.reward["param_validity"] == 0.25
    assert outcome.reward["recall"] == 1.0
