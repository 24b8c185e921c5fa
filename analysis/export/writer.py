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

from collections import Counter
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field

from analysis.export.layout import (
    MANIFEST_FILE,
    Arm,
    ExportManifest,
    FileSets,
    jsonl,
    run_export,
    set_folder,
)
from analysis.export.layout import default_out_dir as _default_out_dir
from analysis.export.nemo import rows_for
from analysis.files import Issue
from analysis.status import QUALITY_STATUSES
from analysis.tables import Tables
from analysis.trial_inputs import read_trial_inputs

__all__ = ["FAMILIES", "FORMAT", "INDEX_FILE", "MANIFEST_FILE", "ExportManifest", "RowIndex",
           "default_out_dir", "export_nemo"]

FAMILIES = ("tool_call_accuracy", "agent_goal_accuracy", "topic_adherence")
INDEX_FILE = "rows.jsonl"
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


def default_out_dir(path: Path) -> Path:
    return _default_out_dir(path, FORMAT)


def _file_sets(arm: Arm, tables: Tables, sweep: bool, issues: list[Issue],
               skipped: Counter[str]) -> FileSets:
    job_paths = dict(zip(tables.jobs["job"], tables.jobs["path"], strict=True))
    sets: dict[str, dict[str, list[BaseModel]]] = {}
    for trial in tables.trials.to_dict("records"):
        if trial["status"] not in QUALITY_STATUSES:
            skipped[trial["status"]] += 1
            continue
        trial_dir = Path(job_paths[trial["job"]]) / trial["trial"]
        inputs = read_trial_inputs(trial_dir, trial["scenario_id"], issues,
                                   tables.task_dir(trial))
        folder = set_folder(arm, int(trial["level"]), sweep)
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
    return {folder: {**{f"{name}.jsonl": jsonl(rows[name]) for name in FAMILIES},
                     INDEX_FILE: jsonl(rows["index"])}
            for folder, rows in sets.items()}


def _owns(name: str) -> bool:
    return name == INDEX_FILE or name.removesuffix(".jsonl") in FAMILIES


def _rows(contents: dict[str, str]) -> int:
    return contents[INDEX_FILE].count("\n")


def export_nemo(path: Path, out: Path | None = None,
                log: Callable[[str], None] = lambda _: None) -> ExportManifest:
    """Write the datasets; raises AnalysisInputError (one line) when nothing can be exported."""
    return run_export(path, out, FORMAT, _file_sets, _owns, _rows, log)
