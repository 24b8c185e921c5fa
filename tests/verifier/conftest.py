"""Fixtures for the verifier tests: the scoring module, and a trial laid out like a task."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import ModuleType

import pytest
from verifier_harness import EXPECTED_FIXTURE, TEST_SH, VERIFY_SCRIPT, Trial, load_verify_module


@pytest.fixture(scope="session")
def verify() -> ModuleType:
    return load_verify_module()


@pytest.fixture
def trial(tmp_path: Path) -> Trial:
    trial = Trial(tmp_path)
    trial.tests_dir.mkdir()
    shutil.copy(VERIFY_SCRIPT, trial.tests_dir / "verify.py")
    shutil.copy(TEST_SH, trial.tests_dir / "test.sh")
    shutil.copy(EXPECTED_FIXTURE, trial.tests_dir / "expected.json")
    return trial
