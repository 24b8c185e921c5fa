"""The profile registry and the import direction inside serve/."""

from __future__ import annotations

import ast
from pathlib import Path

SERVE = Path(__file__).resolve().parents[2] / "bankbench" / "serve"


def _serve_imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "bankbench.serve":
                found |= {a.name for a in node.names}
            elif node.module.startswith("bankbench.serve."):
                found.add(node.module.split(".")[2])
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[2] for a in node.names
                      if a.name.startswith("bankbench.serve.")}
    return found


def test_serve_modules_import_only_downward():
    graph = {p.stem: _serve_imports(p) - {p.stem} for p in SERVE.glob("*.py")}
    # Nothing imports the entry points: the registry only from api, api from nobody in serve/.
    assert [m for m, deps in graph.items() if "api" in deps] == []
    assert [m for m, deps in graph.items() if "profiles" in deps] == ["api"]
    # No cycles, lazy imports included: repeatedly drop modules that import nothing left.
    left = dict(graph)
    while left:
        leaves = [m for m, deps in left.items() if not deps & left.keys()]
        assert leaves, f"import cycle among {sorted(left)}"
        for m in leaves:
            del left[m]


def test_every_registered_profile_implements_the_protocol_and_is_in_the_help():
    from bankbench.commands.serve import PROFILE_HELP
    from bankbench.serve.profiles import REGISTRY

    assert set(REGISTRY) == {"cpu-mocker", "cpu-tiny", "gpu-sglang", "gpu-vllm",
                             "gpu-sglang-disagg", "external"}
    for name, prof in REGISTRY.items():
        assert prof.name == name and prof.summary
        for method in ("check", "start", "stop", "alive"):
            assert callable(getattr(prof, method)), (name, method)
        assert name in PROFILE_HELP
