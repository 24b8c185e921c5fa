"""Fixtures for LocalEnvironment tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from harbor.models.task.config import EnvironmentConfig
from harbor.models.trial.paths import TrialPaths
from localenv_helpers import write_environment_dir

from environments.local import LocalEnvironment

EnvFactory = Callable[..., LocalEnvironment]


@pytest.fixture
async def make_env(tmp_path: Path) -> AsyncIterator[EnvFactory]:
    """Builds LocalEnvironments with their roots under tmp_path; stops them all afterwards."""
    made: list[LocalEnvironment] = []
    environment_dir = write_environment_dir(tmp_path / "task" / "environment")

    def factory(name: str = "trial", **options: object) -> LocalEnvironment:
        trial_paths = TrialPaths(tmp_path / "jobs" / name)
        trial_paths.mkdir()
        options.setdefault("state_dir", str(tmp_path / "roots"))
        env = LocalEnvironment(
            environment_dir=environment_dir,
            environment_name="tiny",
            session_id=f"{name}__env",
            trial_paths=trial_paths,
            task_env_config=EnvironmentConfig(),
            **options,
        )
        made.append(env)
        return env

    yield factory
    for env in made:
        await env.stop(delete=True)
