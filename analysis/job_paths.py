"""Where Harbor keeps a job's and a trial's files: the one place outside the contracts that
names them.

A trial's are Harbor's own `TrialPaths`. A job's Harbor names only as properties of a running
`harbor.job.Job` (built from a whole job configuration), so `JobPaths` names them here, as
those properties do (tests/analysis/test_job_paths.py holds the two to each other).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harbor.models.job.lock import LOCK_FILENAME
from harbor.models.trial.paths import TrialPaths

__all__ = ["JobPaths", "TrialPaths", "is_job_dir", "is_trial_dir", "trial_folders"]


@dataclass(frozen=True)
class JobPaths:
    """A Harbor job folder's own files (its trials are folders beside them)."""

    job_dir: Path

    @property
    def config_path(self) -> Path:
        return self.job_dir / "config.json"

    @property
    def result_path(self) -> Path:
        return self.job_dir / "result.json"

    @property
    def lock_path(self) -> Path:
        return self.job_dir / LOCK_FILENAME

    @property
    def log_path(self) -> Path:
        return self.job_dir / "job.log"


def is_job_dir(path: Path) -> bool:
    """A folder Harbor made a job of (it wrote the job's config.json first)."""
    return JobPaths(path).config_path.exists()


def is_trial_dir(path: Path) -> bool:
    """A trial folder: Harbor writes a trial's config.json before anything else of it."""
    return path.is_dir() and TrialPaths(path).config_path.exists()


def trial_folders(job_dir: Path) -> list[Path]:
    """The trial folders of one job, in name order."""
    return sorted(p for p in job_dir.iterdir() if is_trial_dir(p))
