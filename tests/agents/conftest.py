"""Shared fixtures: one real Dynamo frontend + mocker stack for the whole agents test session,
its replay trace scripted by `scripts.all_sessions()`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agents import scripts
from tests.support.built_tasks import copy_tasks


@pytest.fixture(scope="session")
def scripted_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    from bankbench.serve import api, replay

    root = tmp_path_factory.mktemp("agents-stack")
    trace = replay.write_trace(root / "trace.jsonl", scripts.all_sessions())
    with api.running("cpu-mocker", workers=2, state_dir=root / "state",
                     options={"speedup_ratio": 1.0, "replay_trace": str(trace)}) as state:
        yield state


@pytest.fixture(scope="session")
def sample_tasks(sample_tasks_all: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first four sample scenarios as Harbor tasks."""
    return copy_tasks(sample_tasks_all, tmp_path_factory.mktemp("tasks"),
                      sorted(p.name for p in sample_tasks_all.iterdir())[:4])
