"""Shared fixtures: one real Dynamo frontend + mocker stack for the whole agents test session,
its replay trace scripted by `scripts.all_sessions()`. Its KV router keeps session affinity and
the frontend writes its request trace, so the Harbor runs on it also show how each trial's
session ends (test_agent_harbor_e2e.py)."""

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
    with api.running("cpu-mocker", workers=2, router="kv", state_dir=root / "state",
                     options={"speedup_ratio": 1.0, "replay_trace": str(trace),
                              "request_trace": True,
                              "router_session_affinity_ttl_secs": 600}) as state:
        yield state


@pytest.fixture(scope="session")
def sample_tasks(sample_tasks_all: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first four sample scenarios as Harbor tasks."""
    return copy_tasks(sample_tasks_all, tmp_path_factory.mktemp("tasks"),
                      sorted(p.name for p in sample_tasks_all.iterdir())[:4])
