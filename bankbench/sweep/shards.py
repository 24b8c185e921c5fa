"""How a level is split over several Harbor processes (`--shards N`), and its shard records.

The level's tasks are split over N shards whose concurrencies sum to the level; each shard is
an ordinary Harbor job in `c<level>/s<k>/` with its own tasks (harbor -i) and its
`shard.json`. What each shard runs, and running it, is the level runner's (level.py,
executors.py, ray_shards.py), the same for every layout. A shard that fails (its Harbor dies,
is killed) costs only its own unfinished trials: the others run to their end, the level is
marked failed, and `--resume` continues each unfinished shard (contracts/sweep.py: layout).
"""

from __future__ import annotations

import socket
from pathlib import Path

from contracts.atomic import write_atomic
from contracts.sweep import SHARD_FILE, ShardRecord, SweepConfig


def concurrencies(level: int, shards: int) -> list[int]:
    """Split `level` over min(shards, level) shards as evenly as it goes (sums to level)."""
    n = min(shards, level)
    return [level // n + (1 if k < level % n else 0) for k in range(n)]


def task_names(tasks_dir: Path, limit: int | None) -> list[str]:
    """The tasks Harbor runs for `--path tasks_dir --n-tasks limit`: task folders in name
    order, the first `limit` of them (Harbor's own order, so shards run the same trials)."""
    names = sorted(p.name for p in tasks_dir.iterdir() if (p / "task.toml").is_file())
    return names[:limit] if limit else names


def split_tasks(names: list[str], weights: list[int]) -> list[list[str]]:
    """Deal tasks to shards in proportion to their concurrency (largest remainder), in
    contiguous runs of the name order; every task goes to exactly one shard."""
    total = sum(weights)
    exact = [len(names) * w / total for w in weights]
    counts = [int(x) for x in exact]
    for k in sorted(range(len(weights)), key=lambda k: exact[k] - counts[k], reverse=True):
        if sum(counts) == len(names):
            break
        counts[k] += 1
    out, start = [], 0
    for c in counts:
        out.append(names[start:start + c])
        start += c
    return out


def plan(config: SweepConfig, tasks_dir: Path, level: int) -> list[ShardRecord]:
    conc = concurrencies(level, config.shards)
    tasks = split_tasks(task_names(tasks_dir, config.limit), conc)
    return [ShardRecord(level=level, shard=k, n_shards=len(conc), concurrency=c, tasks=t,
                        host=socket.gethostname())
            for k, (c, t) in enumerate(zip(conc, tasks, strict=True))]


def read_record(job: Path) -> ShardRecord | None:
    try:
        return ShardRecord.model_validate_json((job / SHARD_FILE).read_text())
    except (OSError, ValueError):
        return None


def write_record(job: Path, record: ShardRecord) -> None:
    job.mkdir(parents=True, exist_ok=True)
    write_atomic(job / SHARD_FILE, record.model_dump_json(indent=2))
