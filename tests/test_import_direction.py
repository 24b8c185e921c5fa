"""What may import what (docs/ARCHITECTURE.md): bankbench → {tasks, agents, analysis} →
contracts. A lazy import inside a function counts as much as one at the top."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
OURS = {"bankbench", "tasks", "agents", "analysis", "contracts", "environments"}
# package -> packages of ours it must never import
FORBIDDEN = {
    "contracts": OURS - {"contracts"},
    "tasks": {"bankbench", "analysis", "agents"},
    "agents": {"bankbench", "analysis", "tasks"},
    "analysis": {"bankbench", "agents", "tasks"},
}


def imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_only_downward(package):
    template = REPO / "tasks" / "banking" / "template"  # runs inside the task, not ours
    wrong = {
        str(path.relative_to(REPO)): sorted(imported_packages(path) & FORBIDDEN[package])
        for path in (REPO / package).rglob("*.py")
        if template not in path.parents
    }
    assert {k: v for k, v in wrong.items() if v} == {}
