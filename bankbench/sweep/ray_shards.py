"""A level's shards as Ray tasks (`bankbench sweep --ray ADDRESS|auto`).

The same shards as `--shards` on one host (the level's plan and `prepare` in level.py decide
what each runs, as for local shards), each run as one Ray task that starts the shard's Harbor
process on whichever node Ray places it (one CPU each, spread over the nodes). Storage: the
sweep directory (tasks, level jobs, logs) must be on storage every node mounts at the same
path; each task writes its shard's job there and the driver reads it back from the same path.
The driver alone scrapes the server's /metrics around the level (runner.py) and watches the
server as for local shards; each shard records the host and Ray node that ran it.
The project and Harbor must be installed on every node (an image, or
Ray's runtime environment): docs/scaling.md.

Ray is an optional extra (`bankbench[ray]`); nothing imports it unless `--ray` is given.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from bankbench.sweep import harbor_job, stop
from bankbench.sweep.executors import Launch, Outcome, Pacer
from bankbench.sweep.level import mark_started


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


def _take_sigint(cancelled: list[int]) -> Any:
    """In the Ray task: a SIGINT handler of the task's own for its run, which records the cancel
    in `cancelled`; the handler it replaced, or None where it cannot be set (not the main
    thread).

    Ray cancels a running task (`ray.cancel(force=False)`) with `_thread.interrupt_main()`,
    which does nothing while SIGINT is ignored, and a worker ignores it wherever its node was
    started by a script's background job (a CI runner, `nohup ray start ... &`): the
    disposition passes through `ray start`, the raylet and exec to every worker, and Python
    keeps an ignored SIGINT. Recorded rather than raised: a KeyboardInterrupt lands wherever
    the task is, between Harbor's start and its record or in the middle of Harbor's stop."""
    import signal

    def on_cancel(signum: int, frame: object) -> None:
        cancelled.append(signum)

    try:
        return signal.signal(signal.SIGINT, on_cancel)
    except ValueError:
        return None


def _run_shard(cmd: list[str], job: str, log: str) -> dict[str, Any]:
    """Inside the Ray task: run the shard's Harbor to its end where Ray placed it, recording
    the host, node and pid in its shard.json first; cancelled, stop Harbor's process group
    (SIGINT first) and end as Ray's cancelled task."""
    import signal
    import socket

    import ray

    from bankbench import procs
    from bankbench.sweep.harbor_job import harbor_env, stop_process_group
    from bankbench.sweep.session import now
    from bankbench.sweep.shards import read_record, write_record

    cancelled: list[int] = []
    previous = _take_sigint(cancelled)
    try:
        # Ray starts its workers with SIGINT blocked (and, on a node started with it ignored,
        # ignored); spawn gives Harbor both stop signals back (procs._stoppable), as Harbor
        # would otherwise ignore the SIGINT that asks it to stop cleanly.
        proc = procs.spawn(cmd, Path(log), env=harbor_env(), die_with_parent=True)
        try:
            record = read_record(Path(job))
            host, node = socket.gethostname(), ray.get_runtime_context().get_node_id()
            if record is not None:
                record.host, record.node, record.pid = host, node, proc.pid
                record.state, record.started_at = "running", now()
                write_record(Path(job), record)
            # Polled, not proc.wait(): a cancel reaches this thread only between Python
            # instructions, never inside a blocking wait.
            while (code := proc.poll()) is None and not cancelled:
                time.sleep(0.5)
            if cancelled:
                raise KeyboardInterrupt
        except BaseException:  # the task cancelled: take Harbor's whole group with it
            stop_process_group(proc)
            raise
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    return {"code": code, "host": host, "node": node, "pid": proc.pid}


def run_ray(launches: list[Launch], pacer: Pacer, *, address: str, poll_s: float = 2.0,
            cancel_wait_s: float = 60.0, recancel_s: float = 5.0) -> list[Outcome]:
    """Run every launch as a Ray task, all submitted together, and wait for all of them
    while the pacer watches the server: a dead server (JobAborted) or Ctrl-C cancels every
    task still running (each stops its Harbor's process group) before raising."""
    connect(address)
    ray = _ray()
    task = ray.remote(num_cpus=1, max_retries=0, scheduling_strategy="SPREAD")(_run_shard)
    pending: dict[Any, tuple[int, Launch]] = {}
    for i, launch in enumerate(launches):
        harbor_job.announce(launch.cmd, launch.shard.log)
        mark_started(launch.shard, submitted=True)
        ref = task.remote(launch.cmd, str(launch.shard.job), str(launch.shard.log))
        pending[ref] = (i, launch)
    if launches:
        print(f"  c{launches[0].shard.level}: {len(pending)} shard(s) submitted to Ray at "
              f"{address}", flush=True)
    outcomes: dict[int, Outcome] = {}
    try:
        while pending:
            done, _ = ray.wait(list(pending), num_returns=len(pending), timeout=poll_s)
            for ref in done:
                i, launch = pending.pop(ref)
                outcomes[i] = _outcome(ray, ref, launch)
            stop.check()
            reason = pacer.server_gone()
            if reason and pending:
                raise harbor_job.JobAborted(reason)
            pacer.report()
    except (KeyboardInterrupt, harbor_job.JobAborted):
        _cancel(ray, list(pending), cancel_wait_s, recancel_s)
        raise
    pacer.report(final=True)
    return [outcomes[i] for i in sorted(outcomes)]


def _cancel(ray: Any, refs: list[Any], wait_s: float, recancel_s: float) -> None:
    """Cancel every task in `refs` and return once all have ended (each stops its Harbor
    first), as the local executor returns once its shards have stopped, or after `wait_s`.
    The cancel is sent again every `recancel_s` to the tasks still running: one that lands
    before the task has taken SIGINT (its first instructions) is lost, and Ray sends it once."""
    deadline = time.monotonic() + wait_s
    while refs and (left := deadline - time.monotonic()) > 0:
        for ref in refs:
            ray.cancel(ref, force=False)
        _, refs = ray.wait(refs, num_returns=len(refs), timeout=min(recancel_s, left))


def _outcome(ray: Any, ref: Any, launch: Launch) -> Outcome:
    try:
        got = ray.get(ref)
    except Exception as exc:  # the task or its node died: this shard only
        return Outcome(launch.shard, None,
                       f"Ray task failed: {exc.__class__.__name__}: {str(exc)[:300]}")
    return Outcome(launch.shard, got["code"], host=got.get("host"))
