"""A Docker-free Harbor environment: `harbor run ... --env environments.local:LocalEnvironment`.

Each trial gets a private root directory on the host. The task paths (/app, /logs/agent,
/logs/verifier, /logs/artifacts, /tests, /solution, /tmp, /root) are plain directories
in it; the host's system directories (/usr, /etc, /bin, /lib*) appear read-only; the task's
environment/ folder is copied to /app (its Dockerfile is not built). Commands run with bash
in a private mount namespace chrooted into the root (see environments/sandbox.py).

Not a security sandbox: commands share the host's network, processes and kernel, as root.
Options (`--ek key=value`): keep=true keeps the root after the trial (so does --no-delete);
state_dir=PATH puts roots there; ro_paths=/opt,/data shows more host paths read-only.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import stat
import tempfile
import time
from pathlib import Path

from harbor.environments.base import BaseEnvironment, ExecResult
from harbor.environments.capabilities import EnvironmentCapabilities
from harbor.models.trial.paths import EnvironmentPaths
from pydantic import BaseModel, Field, ValidationError, field_validator

from environments.sandbox import (
    BindMount,
    HostTools,
    NamespaceHolder,
    RootLayout,
    build_root,
    cached_host_tools,
    inside,
    kill_processes_rooted_at,
    mounts_under,
    plan_layout,
    run_command,
    setup_script,
)

APP_DIR = "/app"  # where environment/ lands, as the tasks' Dockerfiles `COPY . /app`


class LocalEnvironmentOptions(BaseModel):
    """What `--ek key=value` can set."""

    keep: bool = Field(False, description="Keep the trial's root after the trial.")
    state_dir: Path | None = Field(
        None, description="Folder for trial roots (default: <system tmp>/bankbench-local-env)."
    )
    ro_paths: list[Path] = Field(
        default_factory=list, description="More host paths shown read-only at the same path."
    )

    @field_validator("ro_paths", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        return [p for p in value.split(",") if p] if isinstance(value, str) else value

    @field_validator("ro_paths")
    @classmethod
    def _exist(cls, paths: list[Path]) -> list[Path]:
        for path in paths:
            if not path.is_absolute() or not path.exists():
                raise ValueError(f"{path} is not an existing absolute host path")
        return paths


def _dockerfile_workdir(environment_dir: Path) -> str | None:
    """The last absolute WORKDIR of environment/Dockerfile, so commands start where Docker's do."""
    dockerfile = environment_dir / "Dockerfile"
    if not dockerfile.is_file():
        return None
    found = re.findall(r"^\s*WORKDIR\s+(/\S*)\s*$", dockerfile.read_text(errors="replace"), re.M)
    return found[-1] if found else None


def _skip_special_files(directory: str, names: list[str]) -> list[str]:
    """copytree ignore hook: FIFOs, sockets and devices would block or fail a copy."""
    skipped = []
    for name in names:
        mode = os.lstat(os.path.join(directory, name)).st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
            skipped.append(name)
    return skipped


class LocalEnvironment(BaseEnvironment):
    """Runs each trial in a private chroot on this machine; needs root or user namespaces."""

    def __init__(
        self,
        *args,
        keep: bool | str = False,
        state_dir: str | None = None,
        ro_paths: list[str] | str | None = None,
        **kwargs,
    ):
        try:
            self._options = LocalEnvironmentOptions(
                keep=keep, state_dir=state_dir, ro_paths=ro_paths or []
            )
        except ValidationError as exc:
            error = exc.errors()[0]
            field = ".".join(str(part) for part in error["loc"][:1])
            raise ValueError(f"LocalEnvironment option --ek {field}: {error['msg']}") from None
        self._tools: HostTools | None = None
        self._layout: RootLayout | None = None
        self._state: Path | None = None
        self._holder: NamespaceHolder | None = None
        super().__init__(*args, **kwargs)
        self._workdir = (
            self.task_env_config.workdir or _dockerfile_workdir(self.environment_dir) or APP_DIR
        )

    @staticmethod
    def type() -> str:
        return "local"

    @property
    def capabilities(self) -> EnvironmentCapabilities:
        return EnvironmentCapabilities(mounted=True)

    def _validate_definition(self) -> None:
        if not self.environment_dir.is_dir():
            raise FileNotFoundError(
                f"LocalEnvironment: task environment folder {self.environment_dir} not found"
            )

    @property
    def root(self) -> Path:
        """The host folder that is `/` inside this environment (after start())."""
        if self._layout is None:
            raise RuntimeError("LocalEnvironment used before start()")
        return self._layout.root

    async def start(self, force_build: bool) -> None:
        self._tools = await asyncio.to_thread(cached_host_tools)
        base = self._options.state_dir or Path(tempfile.gettempdir()) / "bankbench-local-env"
        base.mkdir(parents=True, exist_ok=True)
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", self.session_id)[:80]
        self._state = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=base))
        await asyncio.to_thread(self._build_root)
        self._holder = NamespaceHolder(self._tools, self._state / "setup.sh")
        await asyncio.to_thread(self._holder.start)
        self.logger.debug(f"LocalEnvironment root: {self.root}")

    def _private_dirs(self) -> dict[str, int]:
        paths = EnvironmentPaths.for_os(self.os)
        dirs = {str(paths.logs_dir): 0o755, str(paths.tests_dir): 0o755,
                str(paths.solution_dir): 0o755, APP_DIR: 0o755, self._workdir: 0o755,
                "/tmp": 0o1777, "/var/tmp": 0o1777, "/root": 0o700, "/home": 0o755,
                "/run": 0o755}
        # Writable by any user, as Harbor makes its output dirs in containers.
        for log_dir in (paths.agent_dir, paths.verifier_dir, paths.artifacts_dir):
            dirs[str(log_dir)] = 0o777
        return dirs

    def _build_root(self) -> None:
        assert self._state is not None and self._tools is not None
        host_mounts = []
        for mount in self._host_mounts:
            if mount.get("type", "bind") != "bind":
                raise ValueError(f"LocalEnvironment supports bind mounts only, got {mount}")
            source = Path(mount["source"]).resolve()
            if not source.exists():  # as Docker does for a bind source
                source.mkdir(parents=True)
            host_mounts.append(
                BindMount(source, str(mount["target"]), bool(mount.get("read_only")))
            )
        self._layout = plan_layout(
            self._state / "root", self._private_dirs(), self._options.ro_paths, host_mounts
        )
        build_root(self._layout)
        shutil.copytree(
            self.environment_dir, inside(self.root, APP_DIR), symlinks=True,
            dirs_exist_ok=True, ignore=_skip_special_files,
        )
        (self._state / "setup.sh").write_text(setup_script(self._layout, self._tools))
        (self._state / "exec").mkdir()

    async def stop(self, delete: bool) -> None:
        if self._state is None:
            return
        if self._layout is not None:
            await asyncio.to_thread(self._kill_leftovers)
        if self._holder is not None:
            await asyncio.to_thread(self._holder.stop)
            self._holder = None
        if not delete or self._options.keep:
            self.logger.info(f"LocalEnvironment kept {self._state}")
            return
        leftover_mounts = mounts_under(self._state)
        if leftover_mounts:  # never recurse into a host mount
            self.logger.warning(f"LocalEnvironment kept {self._state}: mounted {leftover_mounts}")
            return
        await asyncio.to_thread(shutil.rmtree, self._state, ignore_errors=True)
        self._state = None

    def _kill_leftovers(self) -> None:
        """Background jobs outlive their command; end them before the root goes."""
        deadline = time.monotonic() + 5
        while kill_processes_rooted_at(self.root) and time.monotonic() < deadline:
            time.sleep(0.05)

    def _userspec(self, user: str | int | None) -> str:
        if user is None or str(user) in ("root", "0"):
            return ""
        assert self._tools is not None
        if self._tools.userns:
            raise RuntimeError(
                f"LocalEnvironment cannot run as user {user!r}: without root it runs commands "
                "as root inside a user namespace. Run harbor as root, or drop the task's user"
            )
        return f"{user}:{user}" if str(user).isdigit() else str(user)

    async def exec(
        self,
        command: str,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout_sec: int | None = None,
        user: str | int | None = None,
    ) -> ExecResult:
        if self._holder is None or self._tools is None or self._layout is None:
            raise RuntimeError("LocalEnvironment.exec called before start() or after stop()")
        userspec = self._userspec(self._resolve_user(user))
        # A clean environment like a container's: nothing of the host's (API keys included).
        process_env = {
            "PATH": self._layout.path,
            "HOME": "/tmp" if userspec else "/root",
            "LANG": "C.UTF-8",
            **(self._merge_env(env) or {}),
        }
        user_flag = [f"--userspec={userspec}"] if userspec else []
        argv = [*self._holder.enter_argv(), self._tools.chroot, *user_flag, str(self.root),
                "/usr/bin/env", f"--chdir={cwd or self._workdir}", "/bin/bash", "-c", command]
        code, stdout, stderr, timed_out = await run_command(
            argv, process_env, timeout_sec or None, self._state / "exec"
        )
        if timed_out:
            stderr += f"\nLocalEnvironment: command timed out after {timeout_sec} s; killed"
        return ExecResult(stdout=stdout or None, stderr=stderr or None, return_code=code)

    def _host_path(self, container_path: str, write: bool) -> Path:
        """Where a container path lives on the host: in the root, or in a bind's source."""
        root = self.root.resolve()
        resolved = Path(os.path.realpath(inside(root, container_path)))
        if resolved != root and root not in resolved.parents:
            raise ValueError(f"{container_path} leads out of the environment through a symlink")
        as_seen_inside = "/" + resolved.relative_to(root).as_posix()
        binds = [b for b in self._layout.binds if  # type: ignore[union-attr]
                 as_seen_inside == b.target or as_seen_inside.startswith(b.target + "/")]
        if not binds:
            return resolved
        bind = max(binds, key=lambda b: len(b.target))
        if write and bind.read_only:
            raise PermissionError(f"{container_path} is read-only in LocalEnvironment")
        return bind.source / as_seen_inside[len(bind.target):].lstrip("/")

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        target = self._host_path(target_path, write=True)
        if target_path.endswith("/") or target.is_dir():
            target = target / Path(source_path).name
        target.parent.mkdir(parents=True, exist_ok=True)
        await asyncio.to_thread(shutil.copy2, source_path, target)

    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        target = self._host_path(target_dir, write=True)
        await asyncio.to_thread(
            shutil.copytree, source_dir, target, symlinks=True, dirs_exist_ok=True,
            ignore=_skip_special_files,
        )

    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        source = self._host_path(source_path, write=False)
        if not source.is_file():
            raise FileNotFoundError(f"{source_path} is not a file in the environment")
        Path(target_path).parent.mkdir(parents=True, exist_ok=True)
        await asyncio.to_thread(shutil.copy2, source, target_path)

    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        source = self._host_path(source_dir, write=False)
        if not source.is_dir():
            raise FileNotFoundError(f"{source_dir} is not a directory in the environment")
        if source.resolve() == Path(target_dir).resolve():
            return  # bind-mounted from the very folder asked for
        await asyncio.to_thread(
            shutil.copytree, source, target_dir, symlinks=True, dirs_exist_ok=True,
            ignore=_skip_special_files,
        )


__all__ = ["LocalEnvironment", "LocalEnvironmentOptions"]
