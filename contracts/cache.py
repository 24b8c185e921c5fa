"""Where bankbench keeps what it can rebuild (the Dynamo venv, model files, the hub dataset,
label embeddings): one rule, read by the CLI (`bankbench.paths`) and by the task builder, which
never imports bankbench."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "BANKBENCH_CACHE"


def cache_dir() -> Path:
    """`$BANKBENCH_CACHE`, else `$XDG_CACHE_HOME/bankbench`, else `~/.cache/bankbench`."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "bankbench"
