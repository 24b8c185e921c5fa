"""Fixtures for the mock bank tests: a fresh trial (fixture tool set, empty intents log)."""

from __future__ import annotations

from pathlib import Path

import pytest
from bank_harness import FIXTURES, Bank


@pytest.fixture
def bank(tmp_path: Path) -> Bank:
    return Bank(bank_dir=FIXTURES, intents=tmp_path / "logs" / "agent" / "intents.jsonl")
