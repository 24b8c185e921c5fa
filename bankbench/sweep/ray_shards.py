"""A level's shards as Ray tasks (`bankbench sweep --ray ADDRESS|auto`).

The same shards as `--shards` on one host (bankbench/sweep/shards.py: split, commands, shard
records), each run as one Ray task that starts the shard's Harbor process on whichever node
Ray places it (one CPU each, spread over the nodes). Storage: the sweep directory (tasks, level
jobs, logs) must be on storage every node mounts at the same path; each task writes its
shard's job there and the driver reads it back from the same path. The driver alone scrapes
the server's /metrics around the level (runner.py), and each shard records the host and Ray
node that ran it. The project and Harbor must be installed on every node (an image, or
Ray's runtime environment): docs/scaling.md.

Ray is an optional extra (`bankbench[ray]`); nothing imports it unless `--ray` is given.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from bankbench.sweep import shards
from contracts.sweep import ShardRecord, SweepConfig, level_dir, level_dir_name, shard_dir_name


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise RuntimeError("--ray needs Ray on this machine: pip install 'bankbench[ray]'") \
            from None
    return ray


def connect(address: str) -> None:
    """Join the Ray cluster at `address` (`auto`: the one this machine belongs to), once."""
    ray = _ray()
    if not ray.is_initialized():
        ray.init(address=address, log_to_driver=False,
                 runtime_env={"env_vars": {"HARBOR_TELEMETRY": "0",
                                           "LITELLM_LOCAL_MODEL_COST_MAP": "True"}})


def _run_shard(cmd: list[str], job: str, log: str) -> dict[str, Any]:
    """Inside the Ray task: run the shard's Harbor to its end where Ray placed it, recording
    the host, node and pid in its shard.json first."""
    import socket
    from datetime import UTC, datetime

    import ray

    from bankbench import procs
    from bankbench.sweep.shards import read_record, write_record

    env = dict(os.environ, HARBOR_TELEMETRY="0", LITELLM_LOCAL_MODEL_COST_MAP="True")
    proc = procs.spawn(cmd, Path(log), env=env, die_with_parent=True)
    record = read_record(Path(job))
    host, node = socket.gethostname(), ray.get_runtime_context().get_node_id()
    if record is not None:
        record.host, record.node, record.pid = host, node, proc.pid
        record.state, record.started_at = "running", datetime.now(UTC)
        write_record(Path(job), record)
    try:
        code = proc.wait()
    except BaseException:  # the task cancelled: take Harbor's whole group with it
        from bankbench.sweep.harbor_job import stop_process_group

        stop_process_group(proc)
        raise
    return {"code": code, "host": host, "node": node, "pid": proc.pid}


def run_level(config: SweepConfig, sweep_dir: Path, level: int, tasks_dir: Path,
              base_url: str, model: str, *, watch: Any = None, also: Any = None) -> list[str]:
    """Bring every shard of `level` to complete as Ray tasks started together; one line per
    shard that failed (its Harbor, its task or its node), empty when all finished. `also` as
    in shards.run_level; `watch` (the dead-server check) is not applied to Ray shards yet."""
    from datetime import UTC, datetime

    assert config.ray is not None
    connect(config.ray)
    ray = _ray()
    task = ray.remote(num_cpus=1, max_retries=0, scheduling_strategy="SPREAD")(_run_shard)
    ldir = level_dir(sweep_dir, level)
    pending: dict[Any, tuple[ShardRecord, Path, Path]] = {}
    for planned in shards.plan(config, tasks_dir, level):
        job = ldir / shard_dir_name(planned.shard)
        record = shards.read_record(job) or planned
        cmd = shards.shard_command(config, sweep_dir, record, tasks_dir, base_url, model, also)
        if cmd is None:
            print(f"  c{level} shard {record.shard}: already complete", flush=True)
            continue
        log = sweep_dir / "logs" / f"{level_dir_name(level)}.{job.name}.harbor.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("ab") as out:
            out.write(("\n$ " + " ".join(cmd) + "\n").encode())
        record.state, record.error = "submitted", None
        shards.write_record(job, record)
        pending[task.remote(cmd, str(job), str(log))] = (record, job, log)
    print(f"  c{level}: {len(pending)} shard(s) submitted to Ray at {config.ray}", flush=True)
    failed = []
    try:
        for ref, (planned, job, log) in pending.items():
            try:
                outcome = ray.get(ref)
                code, error = outcome["code"], None
            except Exception as exc:  # the task or its node died: this shard only
                outcome, code = {}, None
                error = f"Ray task failed: {exc.__class__.__name__}: {str(exc)[:300]}"
            record = shards.read_record(job) or planned
            record.finished_at = datetime.now(UTC)
            record.host = outcome.get("host", record.host)
            if code == 0:
                from bankbench.sweep import harbor_job

                record.state = harbor_job.job_state(job).value
            else:
                record.state = "failed"
                record.error = error or f"harbor exited with {code}; see {log}"
                failed.append(f"shard {record.shard} ({record.concurrency} of {level}) on "
                              f"{record.host}: {record.error}")
            shards.write_record(job, record)
    except KeyboardInterrupt:
        for ref in pending:
            ray.cancel(ref, force=False)
        raise
    return failed
