"""Fixtures for the verifier tests: the scoring module, and a trial laid out like a task."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import ModuleType

import pytest
from verifier_harness import (
    EXPECTED_FIXTURE,
    INTERPRETERS,
    SCHEMA_MODULE,
    TEST_SH,
    TOOLS_FIXTURE,
    VERIFY_SCRIPT,
    Trial,
    load_verify_module,
)


@pytest.fixture(scope="session")
def verify() -> ModuleType:
    return load_verify_module()


@pytest.fixture(params=sorted(INTERPRETERS))
def python(request: pytest.FixtureRequest) -> str:
    """Scripts run on the current Python and on Python 3.8 (skipped if absent)."""
    interpreter = INTERPRETERS[request.param]
    if interpreter is None:
        pytest.skip("no Python 3.8 interpreter found (set BANKBENCH_PYTHON38)")
    return interpreter


@pytest.fixture
def trial(tmp_path: Path, python: str) -> Trial:
    trial = Trial(tmp_path, python=python)
    trial.tests_dir.mkdir()
    shutil.copy(VERIFY_SCRIPT, trial.tests_dir / "verify.py")
    shutil.copy(VERIFY_SCRIPT.with_name("transcript.py"), trial.tests_dir / "transcript.py")
    shutil.copy(VERIFY_SCRIPT.with_name("scoring.py"), trial.tests_dir / "scoring.py")
    shutil.copy(TEST_SH, trial.tests_dir / "test.sh")
    shutil.copy(EXPECTED_FIXTURE, trial.tests_dir / "expected.json")
    # As the task builder ships them: the shared schema validator and the tool schemas.
    shutil.copy(SCHEMA_MODULE, trial.tests_dir / "toolschema.py")
    shutil.copy(SCHEMA_MODULE.with_name("convread.py"), trial.tests_dir / "convread.py")
    shutil.copy(TOOLS_FIXTURE, trial.tests_dir / "tools.json")
    return trial
