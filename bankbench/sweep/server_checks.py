"""The sweep's server, seen from the sweep: checked before trials run, watched while a level
runs, its /metrics scraped around each level, and a leftover one stopped or its port awaited
on resume."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from bankbench.sweep import preflight
from bankbench.sweep.errors import SweepError

if TYPE_CHECKING:
    from agents.options import BankingAgentOptions


class Scraper:
    """Prometheus /metrics of the frontend, scraped around each level of one sweep.

    A server without /metrics (llama.cpp's, many hosted APIs) is normal: it is named once per
    sweep, not at every scrape of every level.
    """

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.said_missing = False

    def __call__(self, out: Path) -> bool:
        """Write the scrape to `out`; False (and no file) when the server has none."""
        from bankbench.serve import metrics

        try:
            metrics.scrape(self.base_url, out)
            return True
        except Exception as exc:
            if not self.said_missing:
                self.said_missing = True
                why = getattr(getattr(exc, "response", None), "status_code", None)
                why = f"HTTP {why}" if why else exc.__class__.__name__
                print(f"  (no /metrics from {self.base_url} ({why}): server-side counters "
                      "are not recorded for this sweep)", flush=True)
            return False


def check_server_or_fail(agent: BankingAgentOptions, base_url: str, model: str) -> None:
    """The server answers for the model the agent will ask for (its `--ak model`, else
    `model`), with the key the agent will send."""
    try:
        preflight.check_server(base_url, agent.model or model, api_key_env=agent.api_key_env)
    except preflight.PreflightFailed as exc:
        raise SweepError(f"server check failed, no trial was run: {exc}") from None


class ServerWatch:
    """Is the sweep's server still there? Asked before each level and every `every_s` while one
    runs. A failed check is repeated `rechecks` times `gap_s` apart before the server counts as
    gone: a loaded server may miss one answer, a dead one misses them all. Bounded: at most
    (rechecks + 1) x (timeout + gap) ≈ 30 s from the first miss to the verdict."""

    def __init__(self, agent: BankingAgentOptions, base_url: str, model: str, *,
                 every_s: float = 10.0, rechecks: int = 3, gap_s: float = 3.0,
                 timeout_s: float = 5.0) -> None:
        self.base_url = base_url
        self.model = agent.model or model
        self.key_env = agent.api_key_env
        self.every_s, self.rechecks, self.gap_s, self.timeout_s = (
            every_s, rechecks, gap_s, timeout_s)

    def _miss(self) -> str | None:
        try:
            preflight.check_server(self.base_url, self.model, api_key_env=self.key_env,
                                   timeout_s=self.timeout_s)
            return None
        except preflight.PreflightFailed as exc:
            return str(exc).split(";")[0]  # what failed, without the set-up advice

    def __call__(self) -> str | None:
        """None while the server answers; else why it is considered gone."""
        miss = self._miss()
        if miss is None:
            return None
        t0 = time.monotonic()
        for _ in range(self.rechecks):
            time.sleep(self.gap_s)
            if (again := self._miss()) is None:
                return None
            miss = again
        return (f"the server stopped answering ({self.rechecks + 1} checks over "
                f"{time.monotonic() - t0 + self.timeout_s:.0f} s, last: {miss})")


def reusable_port(base_url: str, wait_s: float = 90.0) -> int | None:
    """The port of the first run's server, once the old one has let go of it."""
    from urllib.parse import urlsplit

    from bankbench import procs

    parts = urlsplit(base_url)
    if parts.hostname not in ("127.0.0.1", "localhost") or parts.port is None:
        return None
    deadline = time.monotonic() + wait_s
    while not procs.port_is_free(parts.port):  # closed connections linger for a while
        if time.monotonic() > deadline:
            raise SweepError(
                f"cannot resume: the level jobs talk to {base_url}, and port {parts.port} is "
                f"still in use after {wait_s:g} s; free it and run the resume again, or resume on "
                f"another port with --port PORT"
            )
        time.sleep(1.0)
    return parts.port


def stop_leftover_server(state_dir: Path) -> None:
    """A sweep killed outright (SIGKILL, lost terminal) leaves the server it started running;
    the resumed sweep owns that state dir, so it stops the old stack before starting anew."""
    from bankbench.serve import api

    try:
        old = api.load_state(state_dir)
    except (FileNotFoundError, ValueError):
        return
    print(f"stopping the {old.profile} server left running by the interrupted sweep ...",
          flush=True)
    api.down(old)
