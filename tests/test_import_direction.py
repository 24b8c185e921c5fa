"""What may import what (docs/ARCHITECTURE.md): bankbench → {tasks, agents, analysis} →
contracts; environments imports nothing of ours; and no package's modules import each other in
a circle. A lazy import inside a function counts as much as one at the top: deferring an import
hides a cycle from the interpreter, not from the reader."""

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
    "environments": OURS - {"environments"},
}
# Runs inside the task environment on its own Python, not as part of ours.
TEMPLATE = REPO / "tasks" / "banking" / "template"


def _sources(root: Path) -> list[Path]:
    return [p for p in root.rglob("*.py") if TEMPLATE not in p.parents and p != TEMPLATE]


def _import_nodes(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node


def imported_packages(path: Path) -> set[str]:
    found: set[str] = set()
    for node in _import_nodes(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_only_downward(package):
    wrong = {
        str(path.relative_to(REPO)): sorted(imported_packages(path) & FORBIDDEN[package])
        for path in _sources(REPO / package)
    }
    assert {k: v for k, v in wrong.items() if v} == {}


# --- layers inside analysis -----------------------------------------------------------------

# Lowest first. A module may import its own layer or one below, never one above: rules and
# shapes; the reading layer (each trial read once, through the contracts); the post-passes
# that consume it; the report that composes them. A module is placed by its longest listed
# prefix; a module not listed fails the test, so a new one must be placed.
ANALYSIS_LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("rules", ("analysis", "analysis.files", "analysis.status", "analysis.markdown",
               "analysis.metrics", "analysis.plots", "analysis.synthetic",
               "analysis.router_decisions", "analysis.task_folder", "analysis.decision_noise",
               "analysis.windows", "analysis.request_columns", "analysis.job_paths")),
    ("reading", ("analysis.trial_rows", "analysis.tables", "analysis.progress",
                 "analysis.trial_inputs", "analysis.trajectory")),
    ("post-passes", ("analysis.provenance", "analysis.compare",
                     "analysis.consistency", "analysis.turns", "analysis.request_trace",
                     "analysis.judge", "analysis.export", "analysis.shards",
                     "analysis.integrity")),
    # summary and console compose the post-passes' per-level figures (metrics, provenance,
    # the judge's) into the table the report and the terminal show.
    ("report", ("analysis.summary", "analysis.console", "analysis.report",
                "analysis.report_sections", "analysis.consistency_report",
                "analysis.quality_report", "analysis.notebook_input",
                "analysis.integrity_report", "analysis.validity")),
]
# Post-passes are siblings: none imports another. An exception is an entry (importing
# post-pass, imported module or package) -> why it is allowed; there is none.
SIBLING_EXCEPTIONS: dict[tuple[str, str], str] = {}


def _place(module: str, table: list[tuple[str, tuple[str, ...]]]) -> tuple[int, str] | None:
    """(layer rank, post-pass or prefix) of a module: its longest listed prefix (the bare
    package name places only the package's own __init__)."""
    best: tuple[int, str] | None = None
    for rank, (_, prefixes) in enumerate(table):
        for prefix in prefixes:
            inside = "." in prefix and module.startswith(prefix + ".")
            if (module == prefix or inside) and (best is None or len(prefix) > len(best[1])):
                best = (rank, prefix)
    return best


def _excepted(module_prefix: str, target: str) -> bool:
    return any(module_prefix == who and (target == what or target.startswith(what + "."))
               for who, what in SIBLING_EXCEPTIONS)


def layer_violations(graph: dict[str, set[str]],
                     table: list[tuple[str, tuple[str, ...]]]) -> list[str]:
    """Imports up a layer, imports between sibling post-passes not excepted, and modules no
    layer places."""
    found = []
    for module in sorted(graph):
        here = _place(module, table)
        if here is None:
            found.append(f"{module}: in no layer")
            continue
        for target in sorted(graph[module]):
            there = _place(target, table)
            if there is None:
                continue  # reported as its own module
            if there[0] > here[0]:
                found.append(f"{module} ({table[here[0]][0]}) → {target} "
                             f"({table[there[0]][0]})")
            elif (table[here[0]][0] == table[there[0]][0] == "post-passes"
                  and here[1] != there[1] and not _excepted(here[1], target)):
                found.append(f"{module} → {target} (sibling post-passes)")
    return found


def test_analysis_imports_only_down_its_layers():
    graph = module_graph(REPO / "analysis", REPO)
    assert layer_violations(graph, ANALYSIS_LAYERS) == []


def test_an_arrow_back_up_is_found():
    graph = {"analysis.trial_rows": {"analysis.provenance"}, "analysis.provenance": set(),
             "analysis.judge.run": {"analysis.export.nemo"}, "analysis.export.nemo": set(),
             "analysis.newthing": set()}
    assert layer_violations(graph, ANALYSIS_LAYERS) == [
        "analysis.judge.run → analysis.export.nemo (sibling post-passes)",
        "analysis.newthing: in no layer",
        "analysis.trial_rows (reading) → analysis.provenance (post-passes)",
    ]


# --- cycles ---------------------------------------------------------------------------------


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def module_graph(package_dir: Path, root: Path) -> dict[str, set[str]]:
    """Module → the modules of the same top-level package it imports (explicit targets only:
    the implicit import of a parent package's __init__ is not an edge)."""
    paths = _sources(package_dir)
    modules = {module_name(p, root): p for p in paths}
    top = package_dir.name

    def resolve(dotted: str) -> str | None:
        # the longest prefix that is one of our modules: `a.b.c.func` → `a.b.c` or `a.b`
        parts = dotted.split(".")
        for end in range(len(parts), 0, -1):
            candidate = ".".join(parts[:end])
            if candidate in modules:
                return candidate
        return None

    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        here = name.split(".") if is_package else name.split(".")[:-1]
        for node in _import_nodes(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                if node.level:
                    base = here[: len(here) - (node.level - 1)]
                    prefix = ".".join(base + ([node.module] if node.module else []))
                else:
                    prefix = node.module or ""
                # `from a.b import c` imports the module a.b.c when there is one, else a.b
                targets = [f"{prefix}.{alias.name}" for alias in node.names]
            for target in targets:
                if target.split(".")[0] != top:
                    continue
                found = resolve(target)
                if found and found != name:
                    graph[name].add(found)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path that returns to its start, or None."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = finished
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state:
            found = visit(start)
            if found:
                return found
    return None


@pytest.mark.parametrize("package", sorted(OURS))
def test_no_import_cycle_inside_a_package(package):
    cycle = find_cycle(module_graph(REPO / package, REPO))
    assert cycle is None, "import cycle: " + " → ".join(cycle or [])


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_a_planted_cycle_is_found_even_through_lazy_and_relative_imports(tmp_path):
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from pkg.b import thing\n",
            "pkg/b.py": "def thing():\n    from .sub import c\n",
            "pkg/sub/__init__.py": "",
            "pkg/sub/c.py": "import pkg.a\n",
        },
    )
    cycle = find_cycle(module_graph(tmp_path / "pkg", tmp_path))
    assert cycle is not None
    assert cycle[0] == cycle[-1]
    assert set(cycle) == {"pkg.a", "pkg.b", "pkg.sub.c"}


def test_a_package_importing_its_parent_init_is_not_a_cycle_unless_the_init_imports_back(
    tmp_path,
):
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "VERSION = 1\n",
            "pkg/a.py": "from pkg import VERSION\n",
            "pkg/b.py": "from pkg.a import VERSION\n",
        },
    )
    assert find_cycle(module_graph(tmp_path / "pkg", tmp_path)) is None
    (tmp_path / "pkg/__init__.py").write_text("from pkg.b import VERSION\n", encoding="utf-8")
    assert find_cycle(module_graph(tmp_path / "pkg", tmp_path)) is not None


# --- tests --------------------------------------------------------------------------------

# A test module is never imported: what two test files share is a helper, and a helper used
# beyond its own folder lives in tests/support/ (a folder's own helper, like the agents a
# Harbor job imports by path, may sit beside its tests).
SUPPORT = "support"


def _test_file(path: Path) -> bool:
    return path.name == "conftest.py" or path.name.startswith("test_")


def _imported_test_files(path: Path, tests: Path) -> set[Path]:
    """Files under `tests` that `path` imports: `tests.a.b` as a dotted name, or a bare name
    of a file in its own folder (pytest puts a test's folder on sys.path)."""
    found: set[Path] = set()
    for node in _import_nodes(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == tests.name:
                candidates = [tests.parent.joinpath(*parts[:end]).with_suffix(".py")
                              for end in range(len(parts), 1, -1)]
            else:
                candidates = [path.parent / f"{parts[0]}.py"]
            found |= {c for c in candidates if c.is_file() and c != path}
    return found


def stray_test_imports(tests: Path) -> list[str]:
    """Imports of a test module or conftest, and of a helper from another folder that is not
    in tests/support/."""
    found = []
    for path in sorted(tests.rglob("*.py")):
        for target in sorted(_imported_test_files(path, tests)):
            where = f"{path.relative_to(tests.parent)} → {target.relative_to(tests.parent)}"
            if _test_file(target):
                found.append(f"{where} (a test module)")
            elif target.parent != path.parent and target.relative_to(tests).parts[0] != SUPPORT:
                found.append(f"{where} (a helper outside tests/{SUPPORT}/)")
    return found


def test_no_test_module_imports_another():
    assert stray_test_imports(REPO / "tests") == []


def test_a_test_importing_a_test_or_a_stray_helper_is_found(tmp_path):
    _write(tmp_path, {
        "tests/a/test_x.py": "from tests.a.test_y import thing\nimport helper\n",
        "tests/a/test_y.py": "def f():\n    from conftest import fixture\n",
        "tests/a/conftest.py": "",
        "tests/a/helper.py": "",
        "tests/b/test_z.py": "from tests.a.helper import h\nfrom tests.support.s import s\n",
        "tests/support/s.py": "",
    })
    assert stray_test_imports(tmp_path / "tests") == [
        "tests/a/test_x.py → tests/a/test_y.py (a test module)",
        "tests/a/test_y.py → tests/a/conftest.py (a test module)",
        "tests/b/test_z.py → tests/a/helper.py (a helper outside tests/support/)",
    ]
