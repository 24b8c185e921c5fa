"""How busy the client host was while a level ran, from `c<level>/host_load.json`
(contracts/host_load.py, written by the sweep). A level measured on a saturated host measured
the host's queue for CPU as well as the server."""

from __future__ import annotations

from pathlib import Path

from analysis.metrics.base import Metric
from contracts.host_load import SATURATED, HostLoad

HOST_BUSY = Metric("host_cpu_busy", "Client host CPU busy", "share",
                   "Share of all the client host's cores busy while the level ran (its own "
                   f"CPU counters; ≥ {SATURATED:g} is called saturated and warned about).",
                   column="host CPU busy", better=None)
CLIENT_CPU = Metric("host_client_cpu", "Sweep's own CPU", "share",
                    "Share of all cores used by the sweep's processes (harness, agents, task "
                    "sandboxes).", column="sweep's processes", better=None)
SERVER_CPU = Metric("host_server_cpu", "Server processes' CPU", "share",
                    "Share of all cores used by the server processes of a stack the sweep "
                    "started (empty for a server it did not start).", column="server processes",
                    better=None)
OTHER_CPU = Metric("host_other_cpu", "Other work's CPU", "share",
                   "The rest of the busy share: other work on the host.", column="other work",
                   better=None)

METRICS = (HOST_BUSY, CLIENT_CPU, SERVER_CPU, OTHER_CPU)


def read_host_load(path: Path | None) -> HostLoad | None:
    if path is None:
        return None
    try:
        return HostLoad.model_validate_json(Path(path).read_bytes())
    except (OSError, ValueError):
        return None


def host_metrics(path: Path | None) -> dict[str, float]:
    """The level's host figures; empty when it has no readable host_load.json."""
    load = read_host_load(path)
    if load is None:
        return {}
    return {HOST_BUSY.key: load.cpu_busy, CLIENT_CPU.key: load.client_cpu,
            SERVER_CPU.key: float("nan") if load.server_cpu is None else load.server_cpu,
            OTHER_CPU.key: load.other_cpu}


def saturation_warning(levels, prefix: str = "") -> str | None:
    """The one-line warning naming the saturated levels among `levels` ((level, CPU busy
    share, other work's share) each; a share may be NaN), or None when none was saturated."""
    hot = [(level, busy, other) for level, busy, other in levels if busy >= SATURATED]
    if not hot:
        return None
    shown = ", ".join(f"c{int(level)} ({busy:.0%} busy, other work {other:.0%})"
                      for level, busy, other in hot)
    return (f"WARNING: {prefix}the client host's CPU was saturated at {shown}: "
            "latencies there include waiting for CPU, not only for the server.")


def saturation_warnings(summary) -> list[str]:
    """One line per source naming the levels measured on a saturated host."""
    if HOST_BUSY.key not in summary:
        return []
    lines = []
    several = summary["source"].nunique() > 1
    for source, rows in summary.groupby("source", sort=False):
        line = saturation_warning(
            ((r["level"], r[HOST_BUSY.key], r.get(OTHER_CPU.key, float("nan")))
             for _, r in rows.iterrows()), f"{source}: " if several else "")
        if line:
            lines.append(line)
    return lines
