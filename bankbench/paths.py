"""Where bankbench keeps things outside the repository (caches, venvs, server state)."""

from __future__ import annotations

import os
from pathlib import Path

from contracts.cache import cache_dir  # the one rule; bankbench.paths.cache_dir for callers

REPO_ROOT = Path(__file__).resolve().parents[1]


def serve_state_root() -> Path:
    """Where `bankbench serve` records its stacks: `$BANKBENCH_SERVE_STATE`, else
    `<cache>/serve`. Kept apart from the build caches (Dynamo venv, llama.cpp wheel, model
    files) so a test session can record its stacks elsewhere and still share those."""
    env = os.environ.get("BANKBENCH_SERVE_STATE")
    return Path(env) if env else cache_dir() / "serve"


def hub_cache() -> Path:
    """The Hugging Face dataset cache that task builds are given (`--source hf`)."""
    return cache_dir() / "hf"


def dynamo_assets() -> Path:
    """The server-side assets folder (`dynamo/` at the repository root)."""
    return REPO_ROOT / "dynamo"
