"""How busy the client host was while a level ran (contracts/host_load.py), sampled with psutil.

A thread of the sweep process samples once a second: the host's CPU counters (everything that
ran), the CPU time of this process and its descendants (Harbor, the agents, the task
sandboxes), and of the server processes of a stack the sweep started. Each process's CPU time
is its last reading: a process that ended between two samples loses at most a second of it.
What neither tree used is other work on the host.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import psutil

from contracts.atomic import write_atomic
from contracts.host_load import HOST_LOAD_FILE, HostLoad


def _busy_seconds(times: psutil._common.scputimes) -> float:
    idle = times.idle + getattr(times, "iowait", 0.0)
    return sum(times) - idle - getattr(times, "guest", 0.0) - getattr(times, "guest_nice", 0.0)


def _tree(roots: Iterable[psutil.Process]) -> list[psutil.Process]:
    out = []
    for root in roots:
        try:
            out += [root, *root.children(recursive=True)]
        except psutil.Error:
            continue
    return out


class HostSampler:
    """`with HostSampler(server_pids) as s: …` then `s.result`; `server_pids` are the leaders
    of a stack's components (None: the sweep did not start the server)."""

    def __init__(self, server_pids: list[int] | None = None, interval_s: float = 1.0):
        self.server_pids = server_pids
        self.interval_s = interval_s
        self.result: HostLoad | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="host-load", daemon=True)
        self._client: dict[tuple[int, float], float] = {}
        self._server: dict[tuple[int, float], float] = {}
        self._busy: list[float] = []
        self._load1: list[float] = []

    def __enter__(self) -> HostSampler:
        self._start_wall = time.monotonic()
        self._start_times = psutil.cpu_times()
        self._read()
        # CPU the processes had used before the level: not the level's.
        self._before = {**self._client, **self._server}
        psutil.cpu_percent(interval=None)  # the first call only sets its reference
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._read()
        self.result = self._summary()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._busy.append(psutil.cpu_percent(interval=None) / 100.0)
            self._load1.append(os.getloadavg()[0])
            self._read()

    def _read(self) -> None:
        servers = []
        for pid in self.server_pids or ():
            try:
                servers.append(psutil.Process(pid))
            except psutil.Error:
                continue
        server_tree = _tree(servers)
        self._note(self._server, server_tree)
        # A stack the sweep launched runs as its children: its processes count once, as the
        # server's.
        theirs = {p.pid for p in server_tree}
        self._note(self._client, [p for p in _tree([psutil.Process(os.getpid())])
                                  if p.pid not in theirs])

    @staticmethod
    def _note(seen: dict[tuple[int, float], float], processes: list[psutil.Process]) -> None:
        for p in processes:
            try:
                with p.oneshot():
                    t = p.cpu_times()
                    # (pid, start time): a reused pid is another process.
                    seen[(p.pid, p.create_time())] = t.user + t.system
            except psutil.Error:
                continue

    def _summary(self) -> HostLoad:
        cpus = psutil.cpu_count() or 1
        wall = max(time.monotonic() - self._start_wall, 1e-9)
        capacity = wall * cpus
        busy = min(1.0, max(0.0, (_busy_seconds(psutil.cpu_times())
                                  - _busy_seconds(self._start_times)) / capacity))
        client = min(busy, self._spent(self._client) / capacity)
        server = None if self.server_pids is None else min(busy, self._spent(self._server)
                                                           / capacity)
        return HostLoad(
            cpus=cpus, seconds=wall, samples=len(self._busy), cpu_busy=busy,
            cpu_busy_p95=float(np.percentile(self._busy, 95)) if self._busy else None,
            load1_max=max(self._load1) if self._load1 else None,
            client_cpu=client, server_cpu=server,
            other_cpu=max(0.0, busy - client - (server or 0.0)))

    def _spent(self, seen: dict[tuple[int, float], float]) -> float:
        """CPU seconds the processes used inside the window."""
        return sum(max(0.0, t - self._before.get(key, 0.0)) for key, t in seen.items())


def combined(earlier: HostLoad | None, later: HostLoad) -> HostLoad:
    """One level's load over two runs of it (a resumed level): shares weighted by seconds."""
    if earlier is None or earlier.seconds <= 0:
        return later
    total = earlier.seconds + later.seconds

    def mean(a: float | None, b: float | None) -> float | None:
        if a is None or b is None:
            return b if a is None else a
        return (a * earlier.seconds + b * later.seconds) / total

    return HostLoad(
        cpus=later.cpus, seconds=total, samples=earlier.samples + later.samples,
        cpu_busy=mean(earlier.cpu_busy, later.cpu_busy),
        cpu_busy_p95=max(filter(None, (earlier.cpu_busy_p95, later.cpu_busy_p95)), default=None),
        load1_max=max(filter(None, (earlier.load1_max, later.load1_max)), default=None),
        client_cpu=mean(earlier.client_cpu, later.client_cpu),
        server_cpu=mean(earlier.server_cpu, later.server_cpu),
        other_cpu=mean(earlier.other_cpu, later.other_cpu))


def save(level_dir: Path, load: HostLoad | None) -> None:
    """Write (or, for a resumed level, combine into) `c<level>/host_load.json`; a failure to
    write loses only this figure."""
    if load is None:
        return
    path = Path(level_dir) / HOST_LOAD_FILE
    try:
        earlier = (HostLoad.model_validate_json(path.read_bytes()) if path.is_file() else None)
    except (OSError, ValueError):
        earlier = None
    try:
        write_atomic(path, combined(earlier, load).model_dump_json(indent=2) + "\n")
    except OSError:
        pass
