"""Shared fixtures: a stand-in template, the whole sample built once with the real one."""

from __future__ import annotations

from pathlib import Path

import pytest

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
    """The whole sample built once with the real template and the default labels (the
    build tests check what a plain `tasks build` writes; other suites use the cheaper
    `sample_tasks_all`)."""
    out = tmp_path_factory.mktemp("tasks")
    build_tasks("sample", out, log=lambda line: None)
    return out
