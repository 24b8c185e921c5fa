"""Where an export's files go, and the bookkeeping every format shares.

An export reads a job, a sweep, or a comparison of sweeps (a multi-router sweep: one sweep per
arm in `r-<router>/`, named in `routers.json`; a sweep with a batch-invariant control arm, an
ordinary sweep in its `control/` folder). Each arm is read on its own; inside an arm a sweep
gives one file set per level in `c<level>/`, a job one file set in the arm's folder. So
`OUT/c8/` (a sweep), `OUT/r-kv/c8/` (one arm of a router comparison), `OUT/control/c8/` (the
control arm at that level), `OUT/` (a job).

Every format hands over, per file set, file name → text; this module writes them atomically,
removes what an earlier export into the same folder wrote for file sets no longer there (only
files its `export.json` lists), and writes `export.json`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from analysis.files import Issue
from analysis.tables import AnalysisInputError, Tables, is_sweep_dir, load
from contracts.atomic import write_atomic
from contracts.sweep import ROUTERS_FILE, SWEEP_FILE, RouterSweepManifest, level_of_dir

MANIFEST_FILE = "export.json"
# A sweep's batch-invariant control arm: an ordinary sweep folder inside it.
CONTROL_DIR = "control"


class ExportManifest(BaseModel):
    format: str = "nemo-evaluator"
    source: str
    sweep: bool
    levels: dict[str, int] = Field(description="File-set folder ('.' for a job) → rows.")
    files: list[str]
    skipped: dict[str, int] = Field(description="Trials not exported, by status.")
    issues: list[str]


class Arm(BaseModel):
    """One run an export reads on its own: `folder` is where its file sets go under OUT."""

    folder: str
    path: Path


def arms(path: Path) -> list[Arm]:
    """A comparison's arms in the order its manifest gives them, else the path itself."""
    path = Path(path)
    manifest_path = path / ROUTERS_FILE
    if not manifest_path.exists():
        control = path / CONTROL_DIR
        return [Arm(folder=".", path=path)] + (
            [Arm(folder=CONTROL_DIR, path=control)] if (control / SWEEP_FILE).exists() else [])
    try:
        manifest = RouterSweepManifest.model_validate_json(manifest_path.read_bytes())
    except (OSError, ValidationError) as exc:
        raise AnalysisInputError(f"{manifest_path}: unreadable ({exc.__class__.__name__})") from exc
    found = [Arm(folder=run.sweep_dir, path=path / run.sweep_dir) for run in manifest.runs
             if Path(run.sweep_dir).name == run.sweep_dir and (path / run.sweep_dir).is_dir()]
    if not found:
        raise AnalysisInputError(f"{path}: {ROUTERS_FILE} names no arm folder that exists")
    return found


def default_out_dir(path: Path, fmt: str) -> Path:
    """Inside a sweep or comparison; beside a job (Harbor's resume deletes unknown folders
    inside a job)."""
    path = Path(path)
    if is_sweep_dir(path) or (path / ROUTERS_FILE).exists():
        return path / fmt
    return path.parent / f"{path.resolve().name}-{fmt}"


def set_folder(arm: Arm, level: int, sweep: bool) -> str:
    """The file set's folder under OUT: `[r-<router>/]c<level>`, or the arm's own folder."""
    parts = [p for p in (arm.folder, f"c{level}" if sweep else "") if p and p != "."]
    return str(Path(*parts)) if parts else "."


def set_order(folder: str) -> tuple[str, int]:
    """Arms in name order, levels inside one in numeric order (c1, c4, c16)."""
    head, _, last = folder.rpartition("/")
    level = level_of_dir(last)
    return (head if level is not None else folder, level or 0)


def jsonl(rows: Iterable[BaseModel]) -> str:
    return "".join(row.model_dump_json(exclude_none=True) + "\n" for row in rows)


FileSets = dict[str, dict[str, str]]  # folder → file name → text
Reader = Callable[[Arm, Tables, bool, list[Issue], Counter[str]], FileSets]


def run_export(path: Path, out: Path | None, fmt: str, read: Reader,
               owns: Callable[[str], bool], rows_of: Callable[[dict[str, str]], int],
               log: Callable[[str], None] = lambda _: None,
               empty: str = "only scored and agent_failed trials are exported") -> ExportManifest:
    """Read every arm with `read` (which fills `issues` and counts skipped trials by status),
    write the file sets it returns, and `export.json`. `owns(name)` says which file names
    this format writes (only those are removed as stale); `rows_of` counts a set's rows.
    Raises AnalysisInputError (one line) when nothing can be exported."""
    path = Path(path)
    out = Path(out) if out is not None else default_out_dir(path, fmt)
    issues: list[Issue] = []
    skipped: Counter[str] = Counter()
    sets: FileSets = {}
    table_issues: list[str] = []
    sweep = False
    for arm in arms(path):
        tables = load(arm.path)
        arm_sweep = is_sweep_dir(arm.path)
        sweep = sweep or arm_sweep
        sets.update(read(arm, tables, arm_sweep, issues, skipped))
        rows = tables.issues.to_dict("records") if len(tables.issues) else []
        table_issues += [f"{row['path']}: {row['message']}" for row in rows]
    if not sets:
        counts = ", ".join(f"{n} {s}" for s, n in sorted(skipped.items())) or "no trials"
        raise AnalysisInputError(f"{path}: nothing to export ({counts}; {empty})")
    sets = dict(sorted(sets.items(), key=lambda item: set_order(item[0])))
    files: list[str] = []
    for folder, contents in sets.items():
        directory = out / folder
        directory.mkdir(parents=True, exist_ok=True)
        for name, text in contents.items():
            write_atomic(directory / name, text)
            files.append(str(Path(folder) / name))
        log(f"{folder if folder != '.' else path.name}: {rows_of(contents)} rows → {directory}")
    manifest = ExportManifest(
        format=fmt, source=str(path), sweep=sweep, files=files, skipped=dict(skipped),
        levels={folder: rows_of(contents) for folder, contents in sets.items()},
        issues=[str(i) for i in issues] + table_issues)
    remove_stale(out, set(files), owns)
    write_atomic(out / MANIFEST_FILE, manifest.model_dump_json(indent=2) + "\n")
    return manifest


def remove_stale(out: Path, written: set[str], owns: Callable[[str], bool]) -> None:
    """Files an earlier export into `out` wrote and this one did not (a level no longer in
    the sweep): only those its export.json lists and whose names this format writes, so
    nothing else in `out` is touched; a folder left empty goes too."""
    try:
        earlier = ExportManifest.model_validate_json((out / MANIFEST_FILE).read_bytes())
    except (OSError, ValueError):
        return
    for name in set(earlier.files) - written:
        stale = out / name
        if not owns(stale.name) or ".." in Path(name).parts:
            continue
        stale.unlink(missing_ok=True)
        folder = stale.parent
        while folder != out and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
            folder = folder.parent
