"""Where bankbench keeps things outside the repository (caches, venvs, server state)."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def cache_dir() -> Path:
    """`$BANKBENCH_CACHE`, else `$XDG_CACHE_HOME/bankbench`, else `~/.cache/bankbench`."""
    env = os.environ.get("BANKBENCH_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "bankbench"


def hub_cache() -> Path:
    """The Hugging Face dataset cache that task builds are given (`--source hf`)."""
    return cache_dir() / "hf"


def dynamo_assets() -> Path:
    """The server-side assets folder (`dynamo/` at the repository root)."""
    return REPO_ROOT / "dynamo"
