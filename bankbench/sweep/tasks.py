"""The task directory a sweep runs: given with --tasks, or built once into <sweep>/tasks."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bankbench.sweep.errors import SweepError
from contracts.sweep import SweepConfig

FALLBACK_BANNER = "!" * 78


@dataclass(frozen=True)
class PreparedTasks:
    tasks_dir: Path
    n_tasks: int
    dataset: str | None  # "<source>@<revision>"; None when a resumed sweep reuses its tasks
    fallback: str | None = None  # why the bundled sample stands in for the hub (auto only)


def fallback_warning(reason: str) -> str:
    """The warning a sweep prints at start and end when the sample replaced the hub."""
    return "\n".join([
        FALLBACK_BANNER,
        "WARNING: --source auto could not reach the Hugging Face hub; this sweep runs the",
        "BUNDLED SAMPLE dataset (a small original set, not Agent Leaderboard v2). Its TSQ is not",
        "comparable with runs on the hub data. Use --source hf to fail instead.",
        f"hub error: {reason}",
        FALLBACK_BANNER,
    ])


def count_tasks(tasks_dir: Path) -> int:
    return sum(1 for p in tasks_dir.iterdir() if (p / "task.toml").exists())


def prepare_tasks(
    config: SweepConfig, sweep_dir: Path, *, reuse: bool = False
) -> PreparedTasks:
    """The task dir, the number of tasks the sweep will run, the dataset description, and
    the reason when `--source auto` fell back to the bundled sample.

    With `reuse` (a resumed sweep) tasks already built in the sweep are kept as they are, so a
    hub that became reachable meanwhile cannot change what the remaining levels run."""
    if config.tasks:
        tasks_dir = Path(config.tasks).resolve()
        if not tasks_dir.is_dir():
            raise FileNotFoundError(f"--tasks {tasks_dir}: no such directory")
        n = count_tasks(tasks_dir)
        if n == 0:
            raise ValueError(f"--tasks {tasks_dir}: holds no task (no */task.toml)")
        return PreparedTasks(tasks_dir, min(n, config.limit or n), f"dir:{tasks_dir}")

    from tasks.banking.build import build_tasks

    tasks_dir = sweep_dir / "tasks"
    if reuse and tasks_dir.is_dir() and count_tasks(tasks_dir):
        return PreparedTasks(tasks_dir, count_tasks(tasks_dir), None)
    source, fallback = config.source, None
    if source == "auto":
        try:
            summary = _build(build_tasks, "hf", tasks_dir, config)
        except Exception as exc:  # hub unreachable or not downloadable: the bundled sample
            fallback = _short(exc)
            print(fallback_warning(fallback), flush=True)
            summary = _build(build_tasks, "sample", tasks_dir, config)
    else:
        summary = _build(build_tasks, source, tasks_dir, config)
    n = count_tasks(tasks_dir)
    revision = getattr(summary, "dataset_revision", None)
    return PreparedTasks(tasks_dir, n, f"{getattr(summary, 'source', source)}@{revision}",
                         fallback)


def _build(build_tasks, source: str, tasks_dir: Path, config: SweepConfig):
    from bankbench.paths import hub_cache

    # The turn limit is a conversation-mode option of the builder; other modes have none.
    turns = {"max_turns": config.max_turns} if config.mode == "conversation" else {}
    return build_tasks(
        source=source, out=tasks_dir, domain="banking", mode=config.mode, labels=config.labels,
        on_bad_row="skip", limit=config.limit, hub_cache=hub_cache(), **turns,
    )


def _short(exc: BaseException) -> str:
    # Our own DatasetError already says what to do in one line; cut only a foreign message.
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{exc.__class__.__name__}: {text}"[:300]


def build_or_reuse_tasks(config: SweepConfig, sweep_dir: Path, reuse: bool) -> PreparedTasks:
    """prepare_tasks with the builder's own errors as one-line SweepErrors."""
    from tasks.banking.dataset import DatasetError
    from tasks.banking.labels import LabelsError
    from tasks.banking.writer import WriteError

    if not config.tasks and not (reuse and (sweep_dir / "tasks").is_dir()):
        print(f"building tasks (source {config.source}, labels {config.labels}"
              + (f", first {config.limit}" if config.limit else "") + ") ...", flush=True)
    try:
        return prepare_tasks(config, sweep_dir, reuse=reuse)
    except (DatasetError, LabelsError, WriteError) as exc:
        raise SweepError(f"building tasks: {exc}") from None
