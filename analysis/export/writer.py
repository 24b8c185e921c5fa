"""Write a job or a sweep as NeMo Evaluator agentic datasets.

Layout (`OUT`): a job gives one file set; a sweep gives one per concurrency level in
`OUT/c<level>/`, because an evaluation job scores one dataset and levels are compared side
by side. Each file set:

  tool_call_accuracy.jsonl   agent_goal_accuracy.jsonl   topic_adherence.jsonl
  rows.jsonl                 line i names the trial behind line i of the three files above

and `OUT/export.json` says what was read, written and skipped. Trials count as bankbench's
quality averages count them: `scored` and `agent_failed` are exported (an agent's own failure
is behaviour to judge); infra, harness, interrupted and running trials are skipped and counted.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from analysis.export.nemo import rows_for
from analysis.files import Issue
from analysis.status import QUALITY_STATUSES
from analysis.tables import AnalysisInputError, is_sweep_dir, load
from analysis.trial_inputs import read_trial_inputs

FAMILIES = ("tool_call_accuracy", "agent_goal_accuracy", "topic_adherence")
INDEX_FILE = "rows.jsonl"
MANIFEST_FILE = "export.json"
FORMAT = "nemo-evaluator"


class RowIndex(BaseModel):
    """One line of rows.jsonl: which trial a dataset line came from."""

    trial: str
    job: str
    level: int
    scenario_id: str
    status: str
    scored_attempt: int | None
    n_calls: int
    tsq: float | None = Field(description="bankbench's TSQ for the trial, for cross-checks.")


class ExportManifest(BaseModel):
    format: str = FORMAT
    source: str
    sweep: bool
    levels: dict[str, int] = Field(description="File-set folder ('.' for a job) → rows.")
    files: list[str]
    skipped: dict[str, int] = Field(description="Trials not exported, by status.")
    issues: list[str]


def default_out_dir(path: Path) -> Path:
    """Beside a job (Harbor's resume deletes unknown folders inside it); inside a sweep."""
    path = Path(path)
    if is_sweep_dir(path):
        return path / "nemo-evaluator"
    return path.parent / f"{path.resolve().name}-nemo-evaluator"


def _write_jsonl(path: Path, rows: list[BaseModel]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(row.model_dump_json(exclude_none=True) + "\n")
    os.replace(tmp, path)


def export_nemo(path: Path, out: Path | None = None,
                log: Callable[[str], None] = lambda _: None) -> ExportManifest:
    """Write the datasets; raises AnalysisInputError (one line) when nothing can be exported."""
    path = Path(path)
    tables = load(path)
    sweep = is_sweep_dir(path)
    out = Path(out) if out is not None else default_out_dir(path)
    job_paths = dict(zip(tables.jobs["job"], tables.jobs["path"], strict=True))
    issues: list[Issue] = []
    skipped: Counter[str] = Counter()
    sets: dict[str, dict[str, list[BaseModel]]] = {}
    for trial in tables.trials.to_dict("records"):
        if trial["status"] not in QUALITY_STATUSES:
            skipped[trial["status"]] += 1
            continue
        trial_dir = Path(job_paths[trial["job"]]) / trial["trial"]
        inputs = read_trial_inputs(trial_dir, trial["scenario_id"], issues,
                                   tables.task_dir(trial))
        folder = f"c{trial['level']}" if sweep else "."
        target = sets.setdefault(folder, {name: [] for name in (*FAMILIES, "index")})
        for name, row in rows_for(inputs).items():
            target[name].append(row)
        tsq = trial.get("tsq")
        target["index"].append(RowIndex(
            trial=trial["trial"], job=trial["job"], level=int(trial["level"]),
            scenario_id=inputs.scenario_id, status=trial["status"],
            scored_attempt=inputs.scored_attempt, n_calls=len(inputs.calls),
            tsq=None if tsq is None or tsq != tsq else float(tsq),
        ))
    if not sets:
        counts = ", ".join(f"{n} {s}" for s, n in sorted(skipped.items())) or "no trials"
        raise AnalysisInputError(f"{path}: nothing to export ({counts}; only scored and "
                                 "agent_failed trials are exported)")
    # Levels in numeric order (c1, c4, c16), the job's own set ('.') alone.
    sets = dict(sorted(sets.items(), key=lambda item: int(item[0][1:] or 0)))
    files: list[str] = []
    for folder, rows in sets.items():
        directory = out / folder
        directory.mkdir(parents=True, exist_ok=True)
        for name in FAMILIES:
            _write_jsonl(directory / f"{name}.jsonl", rows[name])
            files.append(str(Path(folder) / f"{name}.jsonl"))
        _write_jsonl(directory / INDEX_FILE, rows["index"])
        log(f"{folder if folder != '.' else path.name}: {len(rows['index'])} trials → {directory}")
    manifest = ExportManifest(
        source=str(path), sweep=sweep, files=files, skipped=dict(skipped),
        levels={folder: len(rows["index"]) for folder, rows in sets.items()},
        issues=[str(i) for i in issues]
        + [f"{row['path']}: {row['message']}" for row in _table_issues(tables.issues)],
    )
    _remove_stale(out, set(files))
    (out / MANIFEST_FILE).write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return manifest


def _remove_stale(out: Path, written: set[str]) -> None:
    """Files an earlier export into `out` wrote and this one did not (a level no longer in
    the sweep): only those its export.json lists, so nothing else in `out` is touched."""
    try:
        earlier = ExportManifest.model_validate_json((out / MANIFEST_FILE).read_bytes())
    except (OSError, ValueError):
        return
    for name in set(earlier.files) - written:
        stale = out / name
        if stale.name.removesuffix(".jsonl") not in FAMILIES or ".." in Path(name).parts:
            continue
        stale.unlink(missing_ok=True)
        if not any((stale.parent / f"{family}.jsonl").exists() for family in FAMILIES):
            (stale.parent / INDEX_FILE).unlink(missing_ok=True)
            if stale.parent != out and not any(stale.parent.iterdir()):
                stale.parent.rmdir()


def _table_issues(frame: Any) -> list[dict[str, Any]]:
    return frame.to_dict("records") if len(frame) else []
