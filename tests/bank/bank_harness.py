"""Helpers to run the real mock bank script as a subprocess against a hand-made tool set."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
BANK_SCRIPT = REPO_ROOT / "tasks/banking/template/environment/bank"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


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
        env.update(BANK_DIR=str(self.bank_dir), BANK_INTENTS=str(self.intents), **extra)
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
