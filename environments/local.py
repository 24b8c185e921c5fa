"""A Docker-free Harbor environment: `harbor run ... --env environments.local:LocalEnvironment`.

Each trial gets a private root directory on the host. The task paths (/app, /logs/agent,
/logs/verifier, /logs/artifacts, /tests, /solution, /root) are plain directories in it; /tmp,
/var/tmp and /dev/shm share one size-bounded tmpfs; the host's system directories (/usr,
/etc, /bin, /lib*) appear read-only; the task's environment/ folder is copied to /app (its
Dockerfile is not built, but an exec-form ENTRYPOINT is run once at start, as root, as Docker
would run it). Commands run with bash in the trial's own mount, PID and IPC namespaces (its
own /proc), chrooted into the root (see environments/namespace.py).

Who runs what: Harbor's own steps that ask for root run as root; every other command of the
agent phase runs as an unprivileged user of its own (a fresh uid per trial), with bounded
processes and file sizes. Verification begins when Harbor removes the old reward files or
uploads the tests: every process left in the trial is ended first, and the verifier runs as
root. Where only an unprivileged user namespace is available, everything runs as root of that
namespace and the trial's log says so. The threat model and what is not isolated (kernel,
network): docs/local-environment.md.

Options (`--ek key=value`): keep=true keeps the root after the trial (so does --no-delete);
state_dir=PATH puts roots there; ro_paths=/opt,/data shows more host paths read-only;
scratch_mb, max_processes, max_file_mb bound the agent (environments/options.py).

This module is where each of Harbor's environment calls (start, stop, exec, copies in and
out) meets the phase rules above (when the agent phase ends, when verification begins), in
the order they depend on. The parts, one job each: options.py (`--ek` options, the trial's
note), host_tools.py (the host's programs and the namespace recipe), trial_roots.py (where
trial folders live; leftovers of killed runs), root_layout.py + trial_layout.py (what a root
holds, and building it), namespace.py + trial_init.py (the trial's namespaces and mounts),
process_end.py (finding and ending the trial's processes), trial_users.py (who runs a
command), commands.py (an exec's command line), execution.py (running it, output bounded),
uploads.py / transfer.py (copies into / out of the trial), dockerfile.py.
"""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import shutil
import tempfile
from pathlib import Path

from harbor.environments.base import BaseEnvironment, ExecResult
from harbor.environments.capabilities import EnvironmentCapabilities
from harbor.models.trial.paths import EnvironmentPaths
from harbor.utils.scripts import quote_shell_arg

from environments import trial_roots, uploads
from environments.commands import exec_argv, exec_environment
from environments.dockerfile import dockerfile_entrypoint, dockerfile_workdir
from environments.execution import Lingering, run_command
from environments.host_tools import HostTools, cached_host_tools
from environments.namespace import NamespaceHolder, resolve_inside
from environments.options import NOTE_FILE, LocalEnvironmentOptions, LocalEnvNote, parse_options
from environments.root_layout import RootLayout
from environments.transfer import copy_file_out, copy_tree_out
from environments.trial_layout import APP_DIR, make_trial_root
from environments.trial_users import TrialUsers, is_root
from environments.uploads import normal


def verifier_first_step(paths: EnvironmentPaths, task_os) -> str:
    """The command Harbor's verifier runs first, as root, to remove old rewards
    (harbor/verifier/verifier.py · `_remove_reward_files`), built the way Harbor builds it.
    Only this exact command (or the upload of /tests) begins verification: text that merely
    contains it (an agent's command, a model's words on a root command line) never does."""
    paths_ = (paths.reward_text_path, paths.reward_json_path)
    return "rm -f -- " + " ".join(quote_shell_arg(path, task_os) for path in paths_)


class LocalEnvironment(BaseEnvironment):
    """Runs each trial in a private chroot on this machine; needs root or user namespaces."""

    def __init__(
        self,
        *args,
        keep: bool | str = False,
        state_dir: str | None = None,
        ro_paths: list[str] | str | None = None,
        scratch_mb: int | str = 1024,
        max_processes: int | str = 1024,
        max_file_mb: int | str = 1024,
        max_files: int | str = 100_000,
        max_log_depth: int | str = 64,
        max_log_entries: int | str = 20_000,
        max_output_mb: int | str = 8,
        network: str = "private",
        **kwargs,
    ):
        self._options = parse_options(
            keep=keep, state_dir=state_dir, ro_paths=ro_paths or [], scratch_mb=scratch_mb,
            max_processes=max_processes, max_file_mb=max_file_mb, max_files=max_files,
            max_log_depth=max_log_depth, max_log_entries=max_log_entries,
            max_output_mb=max_output_mb, network=network,
        )
        self._tools: HostTools | None = None
        self._layout: RootLayout | None = None
        self._state: Path | None = None
        self._holder: NamespaceHolder | None = None
        self._users: TrialUsers | None = None  # at start, when the host's tools are known
        self._note = LocalEnvNote()
        self._agent_ran = False  # an agent command ran since the agent's uid was last ended
        self._lingering = Lingering()  # output pipes of root's services, drained until stop
        super().__init__(*args, **kwargs)
        self._verifier_step = verifier_first_step(EnvironmentPaths.for_os(self.os), self.os)
        self._workdir = (
            self.task_env_config.workdir or dockerfile_workdir(self.environment_dir) or APP_DIR
        )

    @staticmethod
    def type() -> str:
        return "local"

    @property
    def capabilities(self) -> EnvironmentCapabilities:
        # Not disable_internet: the harness's own root steps keep the host's network.
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

    @property
    def view(self) -> Path:
        """The root as the trial's processes see it (its tmpfs and mounts included), from
        the host: where to look for what a command wrote to /tmp."""
        if self._holder is None:
            raise RuntimeError("LocalEnvironment used before start() or after stop()")
        return Path(self._holder.view())

    @property
    def agent_uid(self) -> int:
        """The unprivileged uid the agent phase's commands run as (when the host has root)."""
        if self._users is None:
            raise RuntimeError("LocalEnvironment used before start()")
        return self._users.agent_uid

    def processes(self) -> list[int]:
        """Host process ids of every process running in the trial (its init aside)."""
        return self._holder.members() if self._holder is not None else []

    async def start(self, force_build: bool) -> None:
        self._tools = await asyncio.to_thread(cached_host_tools)
        self._users = TrialUsers(userns=self._tools.userns)
        base = trial_roots.prepare_base(self._options.state_dir or trial_roots.default_base())
        await asyncio.to_thread(trial_roots.remove_leftovers, base)
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", self.session_id)[:80]
        self._state = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=base))
        trial_roots.record_owner(self._state, keep=self._options.keep)
        await asyncio.to_thread(self._build_root)
        self._holder = NamespaceHolder(self._tools, self._state / "init.json",
                                       private_network=self._private_network)
        await asyncio.to_thread(self._holder.start)
        self.logger.debug(f"LocalEnvironment root: {self.root}")
        if self._tools.userns:
            self.logger.warning(
                "LocalEnvironment: no root on this host, so the trial runs in a user namespace "
                "and the agent's commands run as its root, not as an unprivileged user: they can "
                "write the bank's record and leave the chroot. Run harbor as root to isolate "
                "the agent's user."
            )
        await self._run_entrypoint()

    @property
    def _private_network(self) -> bool:
        return self._options.network == "private"

    def _build_root(self) -> None:
        assert self._state is not None
        self._layout = make_trial_root(
            self._state, EnvironmentPaths.for_os(self.os), self._workdir, self.environment_dir,
            self._host_mounts, self._options)

    async def _run_entrypoint(self) -> None:
        """Run the Dockerfile's exec-form ENTRYPOINT once, as root, with `true` for the
        command Docker would pass: services it starts in the background keep running."""
        entrypoint = dockerfile_entrypoint(self.environment_dir)
        if not entrypoint:
            return
        command = " ".join(shlex.quote(word) for word in [*entrypoint, "true"])
        result = await self.exec(command, user="root", timeout_sec=60)
        if result.return_code != 0:
            raise RuntimeError(
                f"LocalEnvironment: the task's ENTRYPOINT {entrypoint} failed "
                f"(exit {result.return_code}): {(result.stderr or result.stdout or '').strip()}"
            )

    async def stop(self, delete: bool) -> None:
        if self._state is None:
            return
        if self._holder is not None:
            await self._end_agent()
            await asyncio.to_thread(self._holder.end_members)
            await asyncio.to_thread(self._holder.stop)
            self._holder = None
        self._lingering.close()
        if not delete or self._options.keep:
            trial_roots.record_owner(self._state, keep=True)
            self.logger.info(f"LocalEnvironment kept {self._state}")
            return
        mounted = await asyncio.to_thread(trial_roots.remove_tree, self._state)
        if mounted:  # never recursed into
            self.logger.warning(f"LocalEnvironment kept {self._state}: mounted {mounted}")
            return
        self._state = None

    async def _end_agent(self) -> None:
        """End every process of the agent's uid, wherever it hides (nested user and PID
        namespaces included): called before any copy out of or into the trial's logs and
        before verification, so nothing of the agent's runs while the harness reads, writes
        or scores. Without root the agent is root of the trial's user namespace, and ending
        it is ending every process of the trial."""
        if self._holder is None or self._users is None or not self._agent_ran:
            return  # nothing of the agent's can be running: no scan of every process
        self._agent_ran = False
        if self._users.userns:
            ended = await asyncio.to_thread(self._holder.end_members)
        else:
            ended = await asyncio.to_thread(self._holder.end_user, self._users.agent_uid)
        if ended:
            self._note.agent_processes_ended += ended
            self._write_note()
            self.logger.debug(f"LocalEnvironment: the agent phase is over; ended {ended}")

    def _write_note(self) -> None:
        """`<trial>/localenv.json`: the environment's own record, beside Harbor's result
        (written whole or not at all: a reader never meets half of it)."""
        path = Path(self.trial_paths.trial_dir) / NOTE_FILE
        partial = path.with_name(f".{NOTE_FILE}.partial")
        try:
            partial.write_text(self._note.model_dump_json(indent=1))
            partial.replace(path)
        except (OSError, ValueError) as exc:
            self.logger.warning(f"LocalEnvironment could not write {NOTE_FILE}: {exc}")

    async def _begin_verification(self) -> None:
        """End every process the agent left, then every other process of the trial, then
        empty the verifier's folder (the agent could never write there; nothing in it
        predates the verifier). It stays root's: a verifier user of the task's gets a uid of
        its own, never the agent's."""
        if self._holder is None or self._users is None or self._users.verifying:
            return
        self._users.verifying = True
        await self._end_agent()
        ended = await asyncio.to_thread(self._holder.end_members)
        self._note.trial_processes_ended += ended
        verifier_dir = str(EnvironmentPaths.for_os(self.os).verifier_dir)
        folder = Path(resolve_inside(self._holder.view(), verifier_dir)[0])
        await asyncio.to_thread(uploads.empty_folder, folder)
        self.logger.debug(f"LocalEnvironment: verification begins; ended {ended} processes")

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
        user = self._resolve_user(user)
        if is_root(user) and command == self._verifier_step:
            await self._begin_verification()
        assert self._users is not None
        uid, warning = self._users.run_as(user)
        if warning:
            self.logger.warning(warning)
        if uid is not None and uid == self._users.verifier_uid:  # the verifier's folder is its
            verifier_dir = str(EnvironmentPaths.for_os(self.os).verifier_dir)
            os.chown(resolve_inside(self._holder.view(), verifier_dir)[0], uid, uid)
        agent = uid is not None and uid == self._users.agent_uid
        self._agent_ran = self._agent_ran or agent or self._tools.userns
        # Only the agent's commands enter the trial's network namespace.
        argv = exec_argv(self._holder.enter_argv(network=agent), self._tools, uid,
                         max_processes=self._options.max_processes,
                         max_file_mb=self._options.max_file_mb, cwd=cwd or self._workdir,
                         command=command)
        process_env = exec_environment(self._layout.path, uid is None, self._merge_env(env))
        done = await run_command(
            argv, process_env, timeout_sec or None,
            max_output_bytes=self._options.max_output_mb << 20,
            linger=self._lingering if is_root(user) else None)
        stderr = done.stderr
        if done.timed_out:
            stderr += f"\nLocalEnvironment: command timed out after {timeout_sec} s; killed"
        return ExecResult(stdout=done.stdout or None, stderr=stderr or None,
                          return_code=done.code)

    def _host_path(self, container_path: str, write: bool) -> Path:
        """Where a container path is, seen from the host through the trial's own mounts, with
        its symlinks resolved inside the root."""
        assert self._holder is not None and self._layout is not None
        host, resolved = resolve_inside(self._holder.view(), container_path)
        if write:
            for bind in self._layout.binds:
                under = resolved == bind.target or resolved.startswith(bind.target + "/")
                if bind.read_only and under:
                    raise PermissionError(f"{container_path} is read-only in LocalEnvironment")
        return Path(host)

    async def _copy_in(self, source: Path, target_path: str, is_dir: bool) -> None:
        """Copy into a place the agent's user could write (or a link the agent planted) from
        inside the trial as the agent's uid (environments/uploads.py). Into Harbor's agent log
        folder, files already there are kept: the bank's records are never replaced by
        Harbor's earlier copy of them (which Harbor 0.25 uploads back before verifying)."""
        assert self._holder is not None and self._tools is not None
        target = normal(target_path)
        if is_dir:
            folder, name = target, "."
        elif target_path.endswith("/") or self._host_path(target, write=True).is_dir():
            folder, name = target, source.name
        else:
            folder, name = os.path.dirname(target), os.path.basename(target)
        argv = self._holder.enter_argv()
        if not self._tools.userns:
            uid = self.agent_uid
            argv += [self._tools.chroot, "--skip-chdir", f"--userspec={uid}:{uid}", "/"]
        exists = self._host_path(folder, write=True).is_dir()
        await asyncio.to_thread(uploads.copy_in_as, argv, source, folder, name,
                                self._is_agent_logs(target), exists)

    def _is_logs(self, container_path: str) -> bool:
        """Under Harbor's /logs (the folders Harbor copies once the agent phase is over)."""
        return uploads.is_under(container_path, str(EnvironmentPaths.for_os(self.os).logs_dir))

    def _is_agent_logs(self, container_path: str) -> bool:
        return uploads.is_under(container_path,
                                str(EnvironmentPaths.for_os(self.os).agent_dir))

    async def _before_upload(self, target_path: str, folder: bool = False) -> None:
        if uploads.is_under(target_path, str(EnvironmentPaths.for_os(self.os).tests_dir)):
            await self._begin_verification()  # the tests arrive only for verification
        elif folder and self._is_agent_logs(target_path):
            await self._end_agent()  # Harbor writes its logs back: the agent phase is over

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        await self._before_upload(target_path)
        target = self._host_path(target_path, write=True)
        if uploads.writable_by_others(self.view, target):
            await self._copy_in(Path(source_path), target_path, is_dir=False)
            return
        if target_path.endswith("/") or target.is_dir():
            target = target / Path(source_path).name
        target.parent.mkdir(parents=True, exist_ok=True)
        await asyncio.to_thread(shutil.copy2, source_path, target)

    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        await self._before_upload(target_dir, folder=True)
        target = self._host_path(target_dir, write=True)
        if uploads.writable_by_others(self.view, target):
            await self._copy_in(Path(source_dir), target_dir, is_dir=True)
            return
        await asyncio.to_thread(uploads.copy_tree_direct, Path(source_dir), target)

    async def prepare_logs_for_host(self) -> None:
        """Harbor's call before it reads logs bind-mounted to the host: the agent phase is
        over."""
        await self._end_agent()

    async def download_dir_filtered(self, *, source_dir: str, target_dir: Path | str,
                                    **filters) -> None:
        """Harbor's filtered copy (include/exclude_logs): packed with tar inside the trial
        (no host tree there), unpacked by Harbor's data filter; the agent phase ends first."""
        if self._is_logs(source_dir):
            await self._end_agent()
        await super().download_dir_filtered(source_dir=source_dir, target_dir=target_dir,
                                            **filters)

    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        """One regular file, no link anywhere on its path (a link is refused, never followed:
        through /proc/<pid>/root an absolute one would lead into the host's tree)."""
        if self._holder is None:
            raise RuntimeError("LocalEnvironment.download_file called before start()")
        await asyncio.to_thread(
            copy_file_out, self._holder.view(), source_path, Path(target_path))

    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        """Folders and regular files only (links and special files left out, at any depth,
        whenever they appear), bounded in depth and count, never replacing a file the host
        target has. A copy of Harbor's log folders ends the agent phase first."""
        if self._holder is None or self._layout is None:
            raise RuntimeError("LocalEnvironment.download_dir called before start()")
        wanted = Path(target_dir).resolve()
        if any(b.source == wanted and normal(source_dir) == b.target
               for b in self._layout.binds):
            await self._end_agent()
            return  # bind-mounted from the very folder asked for
        if self._is_logs(source_dir):
            await self._end_agent()
        report = await asyncio.to_thread(
            copy_tree_out, self._holder.view(), source_dir, Path(target_dir),
            max_depth=self._options.max_log_depth, max_entries=self._options.max_log_entries)
        if report.left_out:
            self._note.logs_left_out.append(report)
            named = ", ".join(f"{e.path} ({e.why})" for e in report.examples[:3])
            self.logger.warning(f"LocalEnvironment left {report.left_out} entries of "
                                f"{source_dir} out of the job folder, e.g. {named}")
        for rejected in report.rejected:
            self._note.files_rejected.append(rejected)
            self.logger.warning(f"LocalEnvironment kept {rejected.path} as {rejected.kept_as}: "
                                f"Harbor parses that name and it is {rejected.why}")
        if report.left_out or report.rejected:
            self._write_note()


__all__ = ["NOTE_FILE", "LocalEnvironment", "LocalEnvNote", "LocalEnvironmentOptions"]
