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

import json
from dataclasses import dataclass
from pathlib import Path

from contracts.expected import EXPECTED_FILE, GoldPerfect, LabelsQuality
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
    try:
        config = json.loads((trial_dir / "config.json").read_text(encoding="utf-8"))
        given = Path(config["task"]["path"])
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError):
        given = None
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
    return (path / TASK_TOML).is_file() or (path / "tests" / EXPECTED_FILE).is_file()


def read_task(task_dir: Path) -> TaskProvenance | None:
    """A task folder's provenance, or None when it has no readable task.toml metadata."""
    meta = read_metadata(task_dir)
    if meta is None:
        return None
    expected = task_dir / "tests" / EXPECTED_FILE
    return TaskProvenance(
        dataset=meta.dataset or UNKNOWN, dataset_revision=meta.dataset_revision,
        labels=meta.labels, mode=meta.mode or UNKNOWN, quality=_label_quality(expected),
        gold_perfect=_gold_perfect(expected))


def _gold_perfect(path: Path) -> GoldPerfect | None:
    """expected.json's `gold_perfect`, or None (absent, null, or unreadable)."""
    try:
        found = json.loads(path.read_text(encoding="utf-8")).get("gold_perfect")
        return None if found is None else GoldPerfect.model_validate(found)
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        return None


def _label_quality(path: Path) -> LabelsQuality | None:
    """`labels.quality` (read through `contracts.expected.LabelsQuality`); absent or
    unreadable → None (not measured)."""
    try:
        labels = json.loads(path.read_text(encoding="utf-8")).get("labels")
        return LabelsQuality.model_validate(labels["quality"])
    except (OSError, UnicodeDecodeError, ValueError, AttributeError, KeyError, TypeError):
        return None  # ValidationError is a ValueError
