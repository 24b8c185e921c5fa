"""The task folder a trial ran, found once, and what its files say the trial measured.

A trial's `config.json` names its task path (Harbor's `TrialConfig.task.path`, absolute or
relative to where Harbor ran); a sweep also records its task folder. `find_task_dir` is the one
finder: the reading layer calls it once per trial and every post-pass takes its answer. The
task's `task.toml [metadata]` (`contracts.task.TaskMetadata`) carries dataset, revision, labels
and instruction mode; its `tests/expected.json` may carry `labels.quality` (the label method's
measured held-out quality, per held-out set) and `gold_perfect` (the gold-perfect agent's
scores on this task).
Everything is read leniently: a task folder that is gone leaves "unknown", never an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from analysis.files import Issue, read_trial_config
from contracts.expected import Expected, GoldPerfect, LabelsQuality, expected_path
from contracts.expected import read_expected as parse_expected
from contracts.task import TASK_TOML, read_metadata

UNKNOWN = "unknown"
NOT_MEASURED = "not measured"


@dataclass(frozen=True)
class TaskProvenance:
    dataset: str = UNKNOWN
    dataset_revision: str = UNKNOWN
    labels: str = UNKNOWN
    mode: str = UNKNOWN
    quality: LabelsQuality | None = None  # the label method's measured held-out quality
    gold_perfect: GoldPerfect | None = None

    @property
    def heldout_f1(self) -> float | None:
        return None if self.quality is None else self.quality.heldout_micro_f1


def find_task_dir(trial_dir: Path, scenario: str, tasks_dir: str | Path | None = None
                  ) -> Path | None:
    """Where the task folder a trial ran is now: the one finder every reader uses, called
    once per trial (analysis.trial_rows keeps its answer in `Tables.task_dirs`).

    In order: the path the trial's config.json names (absolute, or relative to where Harbor
    ran: the current folder or one of the three above the job); the sweep's task folder
    (`tasks_dir/<scenario>`); a `tasks/<name>` beside the job or one of its two parents (a
    sweep moved since the run). A task folder has a task.toml or a tests/expected.json."""
    job_dir = trial_dir.parent
    config = read_trial_config(trial_dir, [])  # gone or unreadable: look in the other places
    given = Path(config.task.path) if config and config.task and config.task.path else None
    candidates: list[Path] = []
    if given is not None:
        candidates += [given] if given.is_absolute() else [
            Path.cwd() / given, job_dir.parent / given, job_dir.parent.parent / given,
            job_dir.parent.parent.parent / given]
    if tasks_dir:
        candidates.append(Path(tasks_dir) / scenario)
    name = given.name if given is not None else scenario
    candidates += [parent / "tasks" / name for parent in trial_dir.parents[:3]]
    return next((c for c in candidates if is_task_dir(c)), None)


def is_task_dir(path: Path) -> bool:
    return (path / TASK_TOML).is_file() or expected_path(path).is_file()


def read_task(task_dir: Path) -> TaskProvenance | None:
    """A task folder's provenance, or None when it has no readable task.toml metadata."""
    meta = read_metadata(task_dir)
    if meta is None:
        return None
    expected = read_expected(task_dir, [])
    labels = expected.labels if expected is not None else None
    return TaskProvenance(
        dataset=meta.dataset or UNKNOWN, dataset_revision=meta.dataset_revision,
        labels=meta.labels, mode=meta.mode or UNKNOWN,
        quality=labels.quality if labels is not None else None,
        gold_perfect=expected.gold_perfect if expected is not None else None)


def read_expected(task: Path | None, issues: list[Issue]) -> Expected | None:
    """The task's `tests/expected.json`, or None (no task folder, or unreadable: an Issue)."""
    if task is None or not expected_path(task).is_file():
        return None
    try:
        return parse_expected(task)
    except (OSError, ValidationError) as exc:
        issues.append(Issue(str(expected_path(task)),
                            f"not a valid Expected ({str(exc).splitlines()[0]})"))
        return None
