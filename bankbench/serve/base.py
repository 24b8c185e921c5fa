"""What every server profile is, said once: the request `up` passes on, the protocol a profile
implements, the router modes, and the report of which components live.

The bottom of `bankbench.serve` beside `errors` and `state`: profile modules import this,
`profiles` (the registry) imports the profile modules, `api` imports the registry, and no
module imports one above it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from bankbench.serve.state import ServerState

# Dynamo 1.6.1 frontend `--router-mode` values.
ROUTER_MODES = (
    "round-robin",
    "random",
    "power-of-two",
    "kv",
    "direct",
    "least-loaded",
    "device-aware-weighted",
)

# Routers that are a component of the stack (between the frontend and the workers) rather
# than a frontend mode; `dynamo/routers/` holds their programs. Only the CPU mocker profile
# launches them today (the GPU profiles print their spec in `--dry-run`).
COMPONENT_ROUTERS = ("thompson",)
ROUTERS = ROUTER_MODES + COMPONENT_ROUTERS


class StartRequest(BaseModel):
    """The user's choice of profile arguments (`serve up` flags, `api.up` keywords)."""

    model_config = ConfigDict(frozen=True)

    router: str | None = Field(default=None, description="None: the profile's default")
    workers: int | None = Field(default=None, description="None: the profile's default")
    port: int | None = Field(default=None, description="frontend port; None: a free one")
    model: str | None = Field(default=None, description="served model name; None: default")
    options: dict = Field(default_factory=dict, description="`--set` values, unvalidated")


class ComponentStatus(BaseModel):
    name: str
    alive: bool | None = Field(description="None when it cannot be told (engine unreachable)")
    pid: int | None = None
    container_id: str | None = None


class StackProfile(Protocol):
    """One way of serving a model. A new profile is one module with a class like this and one
    line in `bankbench.serve.profiles`."""

    name: str
    summary: str  # one line for `--help`
    launches: bool  # False: records an existing server (nothing to start, stop or watch)

    def check(self, req: StartRequest) -> None:
        """Raise ServeError if `start` would refuse `req`; starts and contacts nothing."""

    def start(self, req: StartRequest, state_dir: Path) -> ServerState:
        """Start the stack, recording it in `state_dir`; return once it answers."""

    def dry_run(self, req: StartRequest, state_dir: Path) -> str:
        """Pasteable shell text of what `start` would run (ServeError if it cannot tell)."""

    def stop(self, state: ServerState) -> None:
        """Stop exactly what `start` started."""

    def alive(self, state: ServerState) -> list[ComponentStatus]:
        """Which of the recorded components still run."""


def is_gone(statuses: list[ComponentStatus]) -> bool:
    """A stack whose every recorded component is known to have ended."""
    return bool(statuses) and all(s.alive is False for s in statuses)
