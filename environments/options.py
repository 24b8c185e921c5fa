"""What `--ek key=value` can set on LocalEnvironment, and what it records of each trial."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError, field_validator

from environments.transfer import CopyReport, Rejected

NOTE_FILE = "localenv.json"  # in the trial's folder on the host: what the environment did


class LocalEnvironmentOptions(BaseModel):
    """What `--ek key=value` can set."""

    keep: bool = Field(False, description="Keep the trial's root after the trial.")
    state_dir: Path | None = Field(
        None, description="Folder for trial roots (default: /dev/shm/bankbench-local-env where "
        "/dev/shm is a memory filesystem programs may run from, else <system tmp>/"
        "bankbench-local-env).")
    ro_paths: list[Path] = Field(
        default_factory=list, description="More host paths shown read-only at the same path."
    )
    scratch_mb: int = Field(
        1024, ge=16, description="Room in /tmp, /var/tmp and /dev/shm together (a tmpfs: memory)."
    )
    max_processes: int = Field(
        1024, ge=16, description="Processes the agent's user may have at once (RLIMIT_NPROC)."
    )
    max_file_mb: int = Field(
        1024, ge=1, description="Largest file an agent's command may write (RLIMIT_FSIZE)."
    )
    max_files: int = Field(
        100_000, ge=1000, description="Files and folders /tmp, /var/tmp, /dev/shm and the "
        "agent's log folders may hold together (the scratch tmpfs's inodes).")
    max_log_depth: int = Field(
        64, ge=4, description="Folders deep a copy of the trial's logs to the host goes.")
    max_log_entries: int = Field(
        20_000, ge=100, description="Entries a copy of one log folder to the host takes.")
    max_output_mb: int = Field(
        8, ge=1, le=1024, description="Output of one command the harness keeps, stdout and "
        "stderr each; the rest is counted and dropped, and the result says so.")
    network: Literal["private", "host"] = Field(
        "private", description="private: the agent's commands get a network namespace of "
        "their own with loopback alone; host: they share the host's network.")

    @field_validator("ro_paths", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        return [p for p in value.split(",") if p] if isinstance(value, str) else value

    @field_validator("ro_paths")
    @classmethod
    def _exist(cls, paths: list[Path]) -> list[Path]:
        for path in paths:
            if not path.is_absolute() or not path.exists():
                raise ValueError(f"{path} is not an existing absolute host path")
        return paths


def parse_options(**values: object) -> LocalEnvironmentOptions:
    """The options from `--ek` values (strings as Harbor passes them); a bad one is a
    one-line ValueError naming it."""
    try:
        return LocalEnvironmentOptions.model_validate(values)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"][:1])
        raise ValueError(f"LocalEnvironment option --ek {field}: {error['msg']}") from None


class LocalEnvNote(BaseModel):
    """`<trial>/localenv.json`, written on the host by the environment alone (nothing is ever
    copied there from the trial): what it ended and what it left out of the trial's logs."""

    agent_processes_ended: int = Field(
        0, description="Processes of the agent's uid still running when the agent phase "
        "ended (killed before any copy or verification), nested namespaces included.")
    trial_processes_ended: int = Field(
        0, description="Processes of the trial (the bank service among them) ended when "
        "verification began, nested namespaces included.")
    logs_left_out: list[CopyReport] = Field(
        default_factory=list, description="Copies of the trial's folders that left something "
        "out: links, special files, trees deeper or larger than the bounds.")
    files_rejected: list[Rejected] = Field(
        default_factory=list, description="Files the trial left under a name Harbor parses on "
        "the host (e.g. the agent's trajectory.json) that were not what Harbor expects: kept "
        "under another name, never under theirs.")
