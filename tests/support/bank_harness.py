"""Helpers to run the real mock bank script as a subprocess against a hand-made tool set."""

from __future__ import annotations

import glob
import importlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

REPO_ROOT = Path(__file__).resolve().parents[2]
BANK_SCRIPT = REPO_ROOT / "tasks/banking/template/environment/bank"
FIXTURES = REPO_ROOT / "tests/bank/fixtures"
ENVIRONMENT_DIR = BANK_SCRIPT.parent


def import_task_modules(*names: str) -> dict[str, ModuleType]:
    """The bank's modules, imported as the task imports them (by name, from environment/)."""
    if str(ENVIRONMENT_DIR) not in sys.path:
        sys.path.insert(0, str(ENVIRONMENT_DIR))
    return {name: importlib.import_module(name) for name in names}


def find_python38() -> str | None:
    """The oldest Python the task scripts support: $BANKBENCH_PYTHON38, else a pyenv 3.8, else
    python3.8 on PATH, whichever runs and really is 3.8; None when there is none."""
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
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0 and done.stdout.strip() == "(3, 8)":
            return candidate
    return None


PYTHON38 = find_python38()
# The task scripts run on the environment's python3: check the newest and the oldest supported.
INTERPRETERS = {"py-current": sys.executable, "py3.8": PYTHON38}


@dataclass
class BankResult:
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> object:
        return json.loads(self.stdout)


@dataclass
class Bank:
    """One trial's bank: the fixture tool set and a fresh intents log."""

    bank_dir: Path
    intents: Path
    python: str = sys.executable

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "BANK_ATTEMPT"}
        env.update({"BANK_DIR": str(self.bank_dir), "BANK_INTENTS": str(self.intents)}, **extra)
        return env

    def run(self, *args: str, stdin: str | None = None, **env: str) -> BankResult:
        done = subprocess.run(
            [self.python, str(BANK_SCRIPT), *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=self.env(**env),
            timeout=60,
        )
        return BankResult(done.returncode, done.stdout, done.stderr)

    def records(self) -> list[dict]:
        return [json.loads(line) for line in self.intents.read_text().splitlines() if line]


def write_brief(folder: Path, goals: list[str], max_turns: int = 10, **persona: object) -> None:
    """A customer brief (customer.json) in a bank folder: a conversation-mode task's."""
    who = {"name": "Maya Okafor", "age": 29, "occupation": "nurse",
           "personality_traits": ["organised"], "tone": "friendly", "detail_level": "moderate",
           **persona}
    (folder / "customer.json").write_text(json.dumps({
        "scenario_id": "banking-000", "persona": who, "first_message": "Hi, I got paid.",
        "goals": goals, "max_turns": max_turns}))
