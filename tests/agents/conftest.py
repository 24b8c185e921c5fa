"""Shared fixtures: one real Dynamo frontend + mocker stack for the whole agents test session,
its replay trace scripted by `scripts.all_sessions()`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agents import scripts


@pytest.fixture(scope="session")
def scripted_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    from bankbench.serve import api, replay

    root = tmp_path_factory.mktemp("agents-stack")
    trace = replay.write_trace(root / "trace.jsonl", scripts.all_sessions())
    with api.running("cpu-mocker", workers=2, state_dir=root / "state",
                     options={"speedup_ratio": 1.0, "replay_trace": str(trace)}) as state:
        yield state


@pytest.fixture(scope="session")
def sample_tasks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first four sample scenarios as Harbor tasks."""
    from tasks.banking.build import build_tasks

    out = tmp_path_factory.mktemp("tasks")
    build_tasks(source="sample", out=out, limit=4, log=lambda line: None)
    return out
