"""Each package's RULES.md exists and names only files and folders that exist, so a rule never
points at code that moved."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ["agents", "analysis", "bankbench", "contracts", "dynamo", "environments",
            "tasks/banking/template"]
_NAMED = re.compile(r"`([^`\s]+)`")


def named_paths(text: str) -> list[str]:
    """The `quoted` words of a rules file that are paths: with a slash, or a .py file."""
    return [w for w in _NAMED.findall(text) if "/" in w or w.endswith(".py")]


@pytest.mark.parametrize("package", PACKAGES)
def test_every_path_a_rules_file_names_exists(package: str) -> None:
    folder = REPO / package
    text = (folder / "RULES.md").read_text(encoding="utf-8")
    missing = [p for p in named_paths(text)
               if not (folder / p).exists() and not (REPO / p).exists()]
    assert missing == []


def test_a_path_that_moved_is_found() -> None:
    assert named_paths("see `sweep/lock.py`, `status.py` and `QUALITY_STATUSES`") == [
        "sweep/lock.py", "status.py"]
