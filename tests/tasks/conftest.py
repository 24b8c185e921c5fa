"""Shared fixtures: a stand-in template, the whole sample built once with the real one."""

from __future__ import annotations

from pathlib import Path

import pytest
from taskdata import template_ready

from tasks.banking.build import TEMPLATE_FILES, build_tasks


@pytest.fixture
def fake_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A stand-in template for tests about the writer itself, not about the bank or verifier."""
    root = tmp_path_factory.mktemp("template")
    for rel in TEMPLATE_FILES:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"# stand-in for {rel}\n")
    return root


@pytest.fixture(scope="session")
def built_sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The whole sample built once with the real template (default labels, goals mode)."""
    if not template_ready():
        pytest.skip("tasks/banking/template (mock bank and verifier) not present yet")
    out = tmp_path_factory.mktemp("tasks")
    build_tasks("sample", out, log=lambda line: None)
    return out
