"""One Harbor job: its command line, its state on disk, the trials that must run again, its
child environment and how it is stopped. The level runner (level.py) and the executors
(executors.py, ray_shards.py) use these for every shard of every level."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path

from harbor.models.trial.paths import TrialPaths

from analysis.files import read_job_result, read_trial_result
from analysis.job_paths import JobPaths, is_job_dir, trial_folders
from analysis.status import trial_status
from bankbench import procs
from contracts.agent_status import PROJECT_AGENT
from contracts.atomic import write_atomic
from contracts.sweep import SweepConfig, level_jobs

AGENT_IMPORT_PATH = PROJECT_AGENT


class JobState(StrEnum):
    ABSENT = "absent"
    PARTIAL = "partial"
    COMPLETE = "complete"


class HarborFailed(RuntimeError):
    pass


class JobAborted(RuntimeError):
    """The job was stopped from outside Harbor (its server went away); the message says why."""


# Harbor's flag (hidden in its --help) that passes -m unchanged, without LiteLLM's provider
# resolution; a job's config.json keeps it, so `harbor job resume` skips it too.
SKIP_PROVIDER_MAPPING = "--skip-model-parsing-and-provider-mapping"


def harbor_executable() -> str:
    """The `harbor` next to this interpreter (the project venv), else whatever is on PATH."""
    beside = Path(sys.executable).with_name("harbor")
    return str(beside) if beside.exists() else "harbor"


def harbor_run_argv(
    config: SweepConfig, *, tasks_dir: Path, sweep_dir: Path, job_name: str, level: int,
    base_url: str, model: str, include: list[str] | None = None, attempts: int | None = None,
) -> list[str]:
    """`harbor run` for one level's job (`level` = its -n); `include` names the tasks of one
    shard (harbor -i each, in place of --n-tasks); `attempts` its -k (default --attempts)."""
    cmd = [
        harbor_executable(), "run",
        "--path", str(tasks_dir),
        "--agent", AGENT_IMPORT_PATH,
        "--env", config.environment,
        "-m", model,
        "-n", str(level),
        "-k", str(attempts or config.attempts),
        "--jobs-dir", str(sweep_dir),
        "--job-name", job_name,
        "--quiet", "--yes",
        # The agent reads its endpoint and model itself (--ak base_url, the -m name without
        # its provider): Harbor's provider mapping would only import LiteLLM, ~5 CPU-s of
        # every Harbor process on 2 cores for nothing the agent uses.
        SKIP_PROVIDER_MAPPING,
        "--ak", f"base_url={base_url}",
    ]
    for key, value in sorted(config.agent_kwargs.items()):
        cmd += ["--ak", f"{key}={value}"]
    if include is not None:
        for name in include:
            cmd += ["-i", name]
    elif config.limit:
        cmd += ["--n-tasks", str(config.limit)]
    return cmd


def resume_command(job_dir: Path) -> list[str]:
    return [harbor_executable(), "job", "resume", "--job-path", str(job_dir)]


def trial_dirs(job_dir: Path) -> list[Path]:
    """Trial folders of a job (each has its own config.json), or of every shard job of a
    sharded level folder."""
    return [trial for job in level_jobs(job_dir) for trial in trial_folders(job)]


def finished_trials(job_dir: Path) -> list[Path]:
    return [p for p in trial_dirs(job_dir) if TrialPaths(p).result_path.exists()]


def harbor_processes_in(sweep_dir: Path) -> list[int]:
    """Pids of live Harbor processes whose command line names `sweep_dir` (a level job of an
    earlier run of this sweep still shutting down)."""
    marker = str(sweep_dir)
    return procs.processes_matching(
        lambda argv: any(Path(a).name == "harbor" for a in argv[:2])
        and any(marker in a for a in argv))


def wait_for_earlier_harbor(sweep_dir: Path, wait_s: float = 60.0) -> None:
    """A sweep killed outright leaves its Harbor job stopping on its own (it gets SIGTERM and
    records its cancelled trials); resuming before it is gone would race it for the job dir."""
    deadline = time.monotonic() + wait_s
    while pids := harbor_processes_in(sweep_dir):
        if time.monotonic() > deadline:
            raise HarborFailed(
                f"Harbor from an earlier run (pid {', '.join(map(str, pids))}) is still writing "
                f"into {sweep_dir}; stop it (kill {pids[0]}) and resume again"
            )
        time.sleep(0.5)


def trial_problem(trial_dir: Path) -> str | None:
    """Why a trial folder with a result.json does not hold a finished trial, or None.

    - "cut short": result.json empty or not JSON (a process killed while writing it). Harbor's
      resume skips such a folder yet runs its trial again, which would leave a broken twin.
    - "interrupted": Harbor stopped the trial because Harbor itself was stopped (SIGINT,
      SIGTERM, or the sweep killed), by analysis's one rule (`analysis.status.is_interrupted`,
      asked through the status the report gives the trial). Its result says nothing about
      the agent.
    A trial that failed on its own, or finished without a reward after its agent made an
    attempt, is a result and stays.
    """
    paths = TrialPaths(trial_dir)
    result = read_trial_result(trial_dir, [])
    if result is None or not result.trial_name:
        return "cut short"  # absent, empty, not JSON, or not a Harbor trial result
    config = paths.config_path
    if config.exists() and not _is_json_object(config):
        return "cut short (its config.json)"  # Harbor's resume would stop on it
    status, _ = trial_status(trial_dir, job_finished=True)
    return "interrupted" if status == "interrupted" else None


def trial_started_at(trial_dir: Path) -> datetime:
    """When a trial started (wall clock): its result.json's `started_at`, else when Harbor
    wrote its config.json (the trial's first file)."""
    result = read_trial_result(trial_dir, [])
    if result is not None and result.started_at is not None:
        at = result.started_at
        return at if at.tzinfo else at.astimezone()  # Harbor writes local naive times
    return datetime.fromtimestamp(TrialPaths(trial_dir).config_path.stat().st_mtime, UTC)


def infra_failed(trial_dir: Path) -> str | None:
    """Why a finished trial must run again on resume: the server failed it (infra_failed) —
    it measured the outage, not the agent."""
    status, reason = trial_status(trial_dir)
    return f"infra failure ({reason})" if status == "infra_failed" else None


def rerun_reason(trial_dir: Path) -> str | None:
    """Why a trial folder holding a result.json is moved aside on resume, or None: not a
    finished trial (trial_problem), or a trial the server failed (infra_failed)."""
    return trial_problem(trial_dir) or infra_failed(trial_dir)


def quarantine_unfinished_trials(job_dir: Path, dest: Path) -> list[tuple[Path, str]]:
    """Move trial folders that hold a result.json but must run again (rerun_reason) out of
    the job into `dest`, so `harbor job resume` runs those trials again and the job holds each
    trial once. Moved, not deleted: nothing is lost. Returns (new path, why)."""
    moved = []
    for trial in trial_dirs(job_dir):
        if not TrialPaths(trial).result_path.exists():
            continue  # Harbor's resume deletes and reruns these itself
        problem = rerun_reason(trial)
        if problem:
            dest.mkdir(parents=True, exist_ok=True)
            target = dest / trial.name
            os.replace(trial, target)
            moved.append((target, problem))
    return moved


def _is_json_object(path: Path) -> bool:
    try:
        return isinstance(json.loads(path.read_text()), dict)
    except (OSError, UnicodeDecodeError, ValueError):
        return False


# The job files Harbor's resume reads without forgiving a bad one, with Harbor's own model of
# each (a file written in place: a process killed mid-write leaves it empty or cut short).
def _job_models(job_dir: Path) -> dict[Path, type]:
    from harbor.models.job.config import JobConfig
    from harbor.models.job.lock import JobLock
    from harbor.models.job.result import JobResult

    paths = JobPaths(job_dir)
    return {paths.config_path: JobConfig, paths.result_path: JobResult,
            paths.lock_path: JobLock}


def broken_job_files(job_dir: Path) -> dict[str, str]:
    """The job's own files that exist but that Harbor could not read back (empty, cut short,
    not its model): file name -> why."""
    broken = {}
    for path, model in _job_models(job_dir).items():
        name = path.name
        if not path.exists():
            continue
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            broken[name] = f"unreadable ({exc.__class__.__name__})"
            continue
        if not text.strip():
            broken[name] = "empty"
            continue
        try:
            model.model_validate_json(text)
        except ValueError:
            broken[name] = "cut short" if not _is_json_object(path) else "not Harbor's format"
    return broken


def job_state(job_dir: Path) -> JobState:
    """State of one Harbor job folder (a level's state is its shards', bankbench/sweep/level.py)."""
    if not is_job_dir(job_dir):
        return JobState.ABSENT
    # Harbor's JobResult, as the reading layer reads it (an unreadable one reads as unfinished).
    result = read_job_result(job_dir, [])
    total = result.n_total_trials
    if result.finished_at and total is not None:
        done = finished_trials(job_dir)
        if len(done) >= total and not any(trial_problem(t) for t in done):
            return JobState.COMPLETE
    return JobState.PARTIAL


def harbor_env() -> dict[str, str]:
    """The environment of every Harbor child, wherever it runs."""
    return dict(os.environ, HARBOR_TELEMETRY="0", LITELLM_LOCAL_MODEL_COST_MAP="True")


def announce(cmd: list[str], log_path: Path) -> None:
    """The command, as a header in Harbor's log, before Harbor writes there."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        log.write(("\n$ " + " ".join(cmd) + "\n").encode())


# SIGINT first: Harbor then finishes writing what it can (cancelled trials' results).
HARBOR_STOP_LADDER: procs.Ladder = (
    (signal.SIGINT, 20.0), (signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0))


def stop_process_group(proc: subprocess.Popen) -> None:
    """Stop Harbor's whole process group: SIGINT, then SIGTERM, then SIGKILL."""
    stop_process_groups([proc])


def stop_process_groups(harbors: list[subprocess.Popen]) -> None:
    """Stop several Harbors' process groups together (a level's shards): one ladder for all,
    each rung's wait shared, not one ladder after another."""
    procs.stop_groups([proc.pid for proc in harbors], HARBOR_STOP_LADDER)
    for proc in harbors:
        proc.poll()


def tail(path: Path, lines: int = 20) -> str:
    return procs.tail(path, lines) or "(no log)"


def _swap_base_url(node: object, old: str, new: str) -> int:
    """Replace `base_url: old` by `new` wherever it sits in a parsed JSON tree; the count."""
    n = 0
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "base_url" and value == old:
                node[key] = new
                n += 1
            else:
                n += _swap_base_url(value, old, new)
    elif isinstance(node, list):
        n += sum(_swap_base_url(item, old, new) for item in node)
    return n


def rewrite_base_url(job_dir: Path, old: str, new: str) -> int:
    """Point a level's Harbor job at a server's new address: the agent's `base_url` in the
    job's config.json and lock.json and in every trial's config.json (Harbor's resume refuses
    a job whose finished trials' configs differ from the job's). Trial results are left as
    they are. A sharded level folder: every shard's job. Returns how many files changed."""
    changed = 0
    files = [path for job in map(JobPaths, level_jobs(job_dir))
             for path in (job.config_path, job.lock_path)]
    files += [TrialPaths(t).config_path for t in trial_dirs(job_dir)]
    for path in files:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if _swap_base_url(data, old, new):
            write_atomic(path, json.dumps(data, indent=4))
            changed += 1
    return changed
