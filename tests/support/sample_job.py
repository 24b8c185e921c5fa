"""A real `harbor run` over a few bundled sample tasks on LocalEnvironment, from a job config
file: the set-up the verifier's and the hostile-agent suites share."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.built_tasks import build_sample

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def run_sample_job(base: Path, name: str, scenarios: tuple[str, ...], *,
                   agents: list[dict[str, Any]], n_concurrent: int,
                   env_kwargs: dict[str, Any] | None = None,
                   pythonpath: tuple[Path, ...] = (), timeout: int = 600,
                   build: dict[str, Any] | None = None,
                   extra_env: dict[str, str] | None = None) -> Path:
    """Build `scenarios` from the sample into `base/tasks` (`build`: more options of
    `build_tasks`, e.g. a mode; the cheap labels unless they name others), run them with
    `agents` as job `name` and return the job folder (`base/jobs/<name>`); fails the test if
    Harbor fails. `extra_env` joins Harbor's environment (an agent's API key). The tasks are
    built in this process (the `tasks build` command is not what these suites test: a CLI
    start-up fewer); the job runs in the real `harbor` CLI."""
    tasks = build_sample(base / "tasks", scenarios=list(scenarios), **(build or {}))
    environment: dict[str, Any] = {"import_path": "environments.local:LocalEnvironment"}
    if env_kwargs:
        environment["kwargs"] = env_kwargs
    config = {
        "job_name": name, "jobs_dir": str(base / "jobs"), "n_concurrent_trials": n_concurrent,
        "quiet": True, "environment": environment, "agents": agents,
        "tasks": [{"path": str(tasks / s)} for s in scenarios],
    }
    (base / "job.json").write_text(json.dumps(config))
    env = {**os.environ, "HARBOR_TELEMETRY": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "PYTHONPATH": os.pathsep.join(str(p) for p in (*pythonpath, REPO)),
           **(extra_env or {})}
    done = subprocess.run([str(BIN / "harbor"), "run", "-c", str(base / "job.json")], cwd=base,
                          env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return base / "jobs" / name
