"""The task directory a sweep runs: given with --tasks, or built once into <sweep>/tasks."""

from __future__ import annotations

from pathlib import Path

from contracts.sweep import SweepConfig


def count_tasks(tasks_dir: Path) -> int:
    return sum(1 for p in tasks_dir.iterdir() if (p / "task.toml").exists())


def prepare_tasks(
    config: SweepConfig, sweep_dir: Path, *, reuse: bool = False
) -> tuple[Path, int, str | None]:
    """Returns (task dir, number of tasks the sweep will run, dataset description).

    With `reuse` (a resumed sweep) tasks already built in the sweep are kept as they are, so a
    hub that became reachable meanwhile cannot change what the remaining levels run."""
    if config.tasks:
        tasks_dir = Path(config.tasks).resolve()
        if not tasks_dir.is_dir():
            raise FileNotFoundError(f"--tasks {tasks_dir}: no such directory")
        n = count_tasks(tasks_dir)
        if n == 0:
            raise ValueError(f"--tasks {tasks_dir}: holds no task (no */task.toml)")
        return tasks_dir, min(n, config.limit or n), f"dir:{tasks_dir}"

    from tasks.banking.build import build_tasks

    tasks_dir = sweep_dir / "tasks"
    if reuse and tasks_dir.is_dir() and count_tasks(tasks_dir):
        return tasks_dir, count_tasks(tasks_dir), None
    source = config.source
    if source == "auto":
        try:
            summary = _build(build_tasks, "hf", tasks_dir, config)
        except Exception as exc:  # hub unreachable or not downloadable: the bundled sample
            print(
                f"dataset: the Hugging Face hub could not be used ({_short(exc)}); "
                "using the bundled sample dataset",
                flush=True,
            )
            summary = _build(build_tasks, "sample", tasks_dir, config)
    else:
        summary = _build(build_tasks, source, tasks_dir, config)
    n = count_tasks(tasks_dir)
    revision = getattr(summary, "dataset_revision", None)
    return tasks_dir, n, f"{getattr(summary, 'source', source)}@{revision}"


def _build(build_tasks, source: str, tasks_dir: Path, config: SweepConfig):
    from bankbench.paths import hub_cache

    return build_tasks(
        source=source, out=tasks_dir, domain="banking", mode=config.mode, labels=config.labels,
        on_bad_row="skip", limit=config.limit, hub_cache=hub_cache(),
    )


def _short(exc: BaseException) -> str:
    # Our own DatasetError already says what to do in one line; cut only a foreign message.
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{exc.__class__.__name__}: {text}"[:300]
