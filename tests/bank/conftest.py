"""Fixtures for the mock bank tests: a fresh trial (fixture tool set, empty intents log)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.bank_harness import FIXTURES, INTERPRETERS, Bank


@pytest.fixture(params=sorted(INTERPRETERS))
def python(request: pytest.FixtureRequest) -> str:
    """Each test runs the bank on the current Python and on Python 3.8 (skipped if absent)."""
    interpreter = INTERPRETERS[request.param]
    if interpreter is None:
        pytest.skip("no Python 3.8 interpreter found (set BANKBENCH_PYTHON38)")
    return interpreter


@pytest.fixture
def bank(tmp_path: Path, python: str) -> Bank:
    intents = tmp_path / "logs" / "agent" / "intents.jsonl"
    return Bank(bank_dir=FIXTURES, intents=intents, python=python)
