"""Which other sweeps on this host load the same server right now.

Two sweeps against one server each measure the other's load as well as their own, and neither
would know. Each sweep records itself (server URL, sweep folder, pid and its start time) in
`<cache>/running-sweeps/` while it runs; a sweep that starts beside a live one on the same URL
is told so. A record whose process is gone (a killed sweep) is ignored and removed. Nothing
here ever stops a sweep: an unwritable cache only loses the warning.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from pydantic import BaseModel, ValidationError

from bankbench import procs
from bankbench.paths import cache_dir
from contracts.atomic import write_atomic


class RunningSweep(BaseModel):
    base_url: str
    sweep_dir: str
    pid: int
    started: float | None


def _folder() -> Path:
    return cache_dir() / "running-sweeps"


def _entry(sweep_dir: Path) -> Path:
    key = hashlib.sha256(str(Path(sweep_dir).resolve()).encode()).hexdigest()[:16]
    return _folder() / f"{key}.json"


def _same_server(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")


def others(base_url: str, sweep_dir: Path) -> list[RunningSweep]:
    """Live sweeps other than `sweep_dir` recorded against `base_url`."""
    found = []
    mine = _entry(sweep_dir)
    for path in sorted(_folder().glob("*.json")) if _folder().is_dir() else []:
        try:
            record = RunningSweep.model_validate_json(path.read_bytes())
        except (OSError, ValidationError):
            continue
        alive = procs.is_alive(record.pid) and procs.is_same_process(record.pid, record.started)
        if not alive:
            path.unlink(missing_ok=True)
            continue
        if path != mine and _same_server(record.base_url, base_url):
            found.append(record)
    return found


def announce(base_url: str, sweep_dir: Path) -> list[str]:
    """Record this sweep as loading `base_url`; one warning line per other live sweep there."""
    lines = [f"WARNING: sweep {o.sweep_dir} (pid {o.pid}) is running against {base_url} too: "
             "each measures the other's load; run them one after the other"
             for o in others(base_url, sweep_dir)]
    record = RunningSweep(base_url=base_url, sweep_dir=str(Path(sweep_dir).resolve()),
                          pid=os.getpid(), started=procs.start_time(os.getpid()))
    try:
        _folder().mkdir(parents=True, exist_ok=True)
        write_atomic(_entry(sweep_dir), record.model_dump_json())
    except OSError:
        pass
    return lines


def leave(sweep_dir: Path) -> None:
    """This sweep no longer loads its server."""
    try:
        _entry(sweep_dir).unlink(missing_ok=True)
    except OSError:
        pass
