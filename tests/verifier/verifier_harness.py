"""Helpers to import the verifier from its path and to run it (or test.sh) as Harbor does."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from contracts.reward import REWARD_KEYS  # noqa: F401  (re-exported to the tests)

REPO_ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = REPO_ROOT / "tasks/banking/template"
VERIFY_SCRIPT = TEMPLATE / "tests/verify.py"
TEST_SH = TEMPLATE / "tests/test.sh"
BANK_SCRIPT = TEMPLATE / "environment/bank"
EXPECTED_FIXTURE = Path(__file__).resolve().parent / "fixtures/expected.json"
BANK_FIXTURES = REPO_ROOT / "tests/bank/fixtures"
SCHEMA_MODULE = TEMPLATE / "environment/toolschema.py"
TOOLS_FIXTURE = BANK_FIXTURES / "tools.json"
# Arguments that satisfy each fixture tool's schema (the verifier checks every call again).
VALID_ARGUMENTS = {
    "get_account_balance": {"account_number": "12", "account_type": "savings"},
    "transfer_funds": {"from_account": "12", "to_account": "34", "amount": 200},
    "list_recent_transactions": {"account_number": "12"},
}


def load_module(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def load_verify_module() -> ModuleType:
    return load_module("bankbench_task_verify", VERIFY_SCRIPT)


# Which interpreters the task scripts are checked on is decided once, beside the bank tests.
INTERPRETERS: dict[str, str | None] = load_module(
    "bankbench_bank_harness", REPO_ROOT / "tests/support/bank_harness.py"
).INTERPRETERS


def call_line(seq: int, tool: str, attempt: int = 1, valid: bool = True) -> dict:
    """An intents line as the bank writes it for one call: with arguments its schema accepts
    (or `{}`, which every fixture tool refuses, when not `valid`)."""
    return {
        "seq": seq,
        "attempt": attempt,
        "tool": tool,
        "arguments": VALID_ARGUMENTS.get(tool, {}) if valid else {},
        "valid": valid,
        "errors": [] if valid else ["invalid"],
        "ts": 1.0,
    }


@dataclass
class Outcome:
    returncode: int
    reward: dict
    details: dict
    stdout: str


@dataclass
class Trial:
    """A trial's files as the verifier sees them: tests/ dir, intents log, verifier output."""

    root: Path
    python: str = sys.executable

    @property
    def tests_dir(self) -> Path:
        return self.root / "tests"

    @property
    def intents(self) -> Path:
        return self.root / "logs/agent/intents.jsonl"

    @property
    def out_dir(self) -> Path:
        return self.root / "logs/verifier"

    def write_intents(self, *entries: dict | str) -> None:
        self.intents.parent.mkdir(parents=True, exist_ok=True)
        lines = [e if isinstance(e, str) else json.dumps(e) for e in entries]
        self.intents.write_text("".join(line + "\n" for line in lines))

    def write_expected(self, content: dict | str) -> None:
        text = content if isinstance(content, str) else json.dumps(content)
        (self.tests_dir / "expected.json").write_text(text)

    def bank(self, *argv: str) -> subprocess.CompletedProcess[str]:
        """Run the real bank on the fixture tool set, recording into this trial's log."""
        env = dict(os.environ, BANK_DIR=str(BANK_FIXTURES), BANK_INTENTS=str(self.intents))
        env.pop("BANK_ATTEMPT", None)
        return subprocess.run(
            [self.python, str(BANK_SCRIPT), *argv],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def outcome(self, returncode: int, stdout: str) -> Outcome:
        reward = json.loads((self.out_dir / "reward.json").read_text())
        details = json.loads((self.out_dir / "tsq.json").read_text())
        return Outcome(returncode, reward, details, stdout)

    def verify(self) -> Outcome:
        done = subprocess.run(
            [
                self.python,
                str(self.tests_dir / "verify.py"),
                "--intents",
                str(self.intents),
                "--out-dir",
                str(self.out_dir),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return self.outcome(done.returncode, done.stdout)

    def test_sh(self, path: str | None = None) -> Outcome:
        """Run test.sh with `python3` resolving to this trial's interpreter (or with `path`)."""
        shim = self.root / "python-shim"
        shim.mkdir(exist_ok=True)
        if not (shim / "python3").exists():
            os.symlink(self.python, shim / "python3")
        env = dict(os.environ, BANK_INTENTS=str(self.intents), VERIFIER_OUT_DIR=str(self.out_dir))
        env["PATH"] = path if path is not None else f"{shim}{os.pathsep}{env.get('PATH', '')}"
        done = subprocess.run(
            ["/usr/bin/env", "bash", str(self.tests_dir / "test.sh")],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        return self.outcome(done.returncode, done.stdout + done.stderr)
