"""What `serve up` started, written to `<state_dir>/state.json` so status/logs/down find it."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from bankbench.paths import serve_state_root
from contracts.atomic import write_atomic

STATE_FILE = "state.json"


class Component(BaseModel):
    """One thing the stack runs: a local process group or a container."""

    name: str = Field(description="frontend, mocker, worker-0, prefill-0, etcd, …")
    kind: Literal["process", "container"]
    pid: int | None = Field(default=None, description="process-group leader (kind=process)")
    start_time: float | None = Field(
        default=None, description="leader's start time (psutil create_time): a reused pid differs")
    container_id: str | None = Field(default=None, description="docker id (kind=container)")
    log_path: Path | None = Field(default=None, description="stdout+stderr of the component")
    command: list[str] = Field(default_factory=list)


class ServerState(BaseModel):
    """A running (or just stopped) server stack."""

    profile: str
    base_url: str = Field(description="OpenAI-compatible base URL, ending in /v1")
    model: str = Field(description="the served model name to put in requests")
    router: str = "round-robin"
    workers: int = 1
    components: list[Component] = Field(default_factory=list)
    state_dir: Path | None = None
    started_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    options: dict = Field(default_factory=dict, description="validated profile options")
    versions: dict[str, str] = Field(
        default_factory=dict,
        description="server software as installed where the stack runs (package → version); "
        "empty when the stack cannot tell",
    )

    @property
    def metrics_url(self) -> str:
        return self.base_url.removesuffix("/v1") + "/metrics"


def default_state_dir(name: str) -> Path:
    return serve_state_root() / name


def _registry() -> Path:
    # One pointer file per state dir outside the default location, so status/down find it.
    return serve_state_root() / ".registry"


def save_state(state: ServerState) -> Path:
    assert state.state_dir is not None
    state.state_dir.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha256(str(state.state_dir.resolve()).encode()).hexdigest()[:16]
    _registry().mkdir(parents=True, exist_ok=True)
    (_registry() / key).write_text(str(state.state_dir.resolve()))
    path = state.state_dir / STATE_FILE
    write_atomic(path, state.model_dump_json(indent=2))
    return path


def load_state(state_dir: Path) -> ServerState:
    """Read `<state_dir>/state.json`; FileNotFoundError names the path when absent."""
    path = Path(state_dir) / STATE_FILE
    if not path.exists():
        raise FileNotFoundError(f"no server state at {path} (nothing started there?)")
    return ServerState.model_validate_json(path.read_text())


def known_state_dirs() -> list[Path]:
    """Every recorded state dir (default location or registered) that holds a state file."""
    root = serve_state_root()
    found = {p.parent.resolve() for p in root.glob(f"*/{STATE_FILE}")}
    for pointer in _registry().glob("*") if _registry().exists() else []:
        target = Path(pointer.read_text().strip())
        if (target / STATE_FILE).exists():
            found.add(target.resolve())
        else:
            pointer.unlink(missing_ok=True)
    return sorted(found)
