"""A sweep directory that is open for levels: its manifest saved, its server up and watched.

`runner.open_sweep` makes one; `runner.run_level` (the sweep and the capacity search alike)
runs levels in it. Its own module so that the level runner (level.py, the executors) can take
it without importing the loop that made it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from bankbench.sweep.server_checks import Scraper, ServerWatch
from contracts.sweep import SweepConfig, SweepManifest

if TYPE_CHECKING:
    from agents.options import BankingAgentOptions


def now() -> datetime:
    return datetime.now(UTC)


@dataclass
class SweepSession:
    """A sweep directory with its server up and its manifest saved: levels can be run in it."""

    config: SweepConfig
    sweep_dir: Path
    manifest: SweepManifest
    tasks_dir: Path
    base_url: str
    model: str
    scrape: Scraper  # one per sweep, so a server without /metrics is named once
    resume_command: str = "bankbench sweep --resume"
    watch: ServerWatch | None = None
    agent: BankingAgentOptions | None = None  # the --ak options, parsed once (preflight)
    # Leaders of the stack's processes when this sweep started it (their CPU is the server's
    # share of the host); None when the server is someone else's or runs in containers.
    server_pids: list[int] | None = None
