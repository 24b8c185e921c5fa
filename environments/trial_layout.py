"""What a trial's root holds, made on the host before its namespaces start: Harbor's folders
and their modes, the task's environment/ as /app, the binds, and the init's spec (init.json)."""

from __future__ import annotations

import json
from pathlib import Path

from harbor.models.trial.paths import EnvironmentPaths

from environments.namespace import init_spec
from environments.options import LocalEnvironmentOptions
from environments.root_layout import BindMount, RootLayout, build_root, inside, plan_layout
from environments.uploads import copy_tree_direct

APP_DIR = "/app"  # where environment/ lands, as the tasks' Dockerfiles `COPY . /app`


def log_dir_modes(paths: EnvironmentPaths) -> dict[str, int]:
    """Harbor's log folders and their modes during the agent phase: the agent's logs and
    artifacts sticky and open to all (as Harbor makes them in containers, but nobody removes
    another's file), the verifier's root's until verification begins."""
    return {str(paths.agent_dir): 0o1777, str(paths.artifacts_dir): 0o1777,
            str(paths.verifier_dir): 0o755}


def private_dirs(paths: EnvironmentPaths, workdir: str) -> dict[str, int]:
    dirs = {str(paths.logs_dir): 0o755, str(paths.tests_dir): 0o755,
            str(paths.solution_dir): 0o755, APP_DIR: 0o755, workdir: 0o755,
            # /root only traversable: the harness's python may be mounted below it.
            "/tmp": 0o1777, "/var/tmp": 0o1777, "/root": 0o711, "/home": 0o755, "/run": 0o755}
    dirs.update(log_dir_modes(paths))
    return dirs


def host_binds(mounts: list[dict]) -> list[BindMount]:
    """Harbor's `--mounts` (and auto-mounted log folders) as binds; bind mounts only."""
    binds = []
    for mount in mounts:
        if mount.get("type", "bind") != "bind":
            raise ValueError(f"LocalEnvironment supports bind mounts only, got {mount}")
        source = Path(mount["source"]).resolve()
        if not source.exists():  # as Docker does for a bind source
            source.mkdir(parents=True)
        binds.append(BindMount(source, str(mount["target"]), bool(mount.get("read_only"))))
    return binds


def make_trial_root(state: Path, paths: EnvironmentPaths, workdir: str, environment_dir: Path,
                    mounts: list[dict], options: LocalEnvironmentOptions) -> RootLayout:
    """Build `state`/root, copy environment/ to /app, write `state`/init.json."""
    layout = plan_layout(state / "root", private_dirs(paths, workdir), options.ro_paths,
                         host_binds(mounts))
    build_root(layout)
    copy_tree_direct(environment_dir, inside(layout.root, APP_DIR))
    spec = init_spec(layout, options.scratch_mb, log_dir_modes(paths),
                     scratch_logs=[str(paths.agent_dir), str(paths.artifacts_dir)],
                     max_files=options.max_files, loopback=options.network == "private")
    (state / "init.json").write_text(json.dumps(spec, indent=1))
    return layout
