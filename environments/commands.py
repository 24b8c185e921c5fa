"""The command line and environment of one `exec` in a trial."""

from __future__ import annotations

from environments.host_tools import HostTools


def exec_argv(enter: list[str], tools: HostTools, uid: int | None, *, max_processes: int,
              max_file_mb: int, cwd: str, command: str) -> list[str]:
    """`enter` (nsenter into the trial, which puts the command at its root), then for a uid
    but root its limits and the switch to it, then `env --chdir` (from inside, so links in
    `cwd` resolve in the trial) and `bash -c command`."""
    argv = list(enter)
    if uid is not None:
        argv += [tools.prlimit, f"--nproc={max_processes}",
                 f"--fsize={max_file_mb * 1024 * 1024}", "--", tools.chroot, "--skip-chdir",
                 f"--userspec={uid}:{uid}", "/"]
    return [*argv, "/usr/bin/env", f"--chdir={cwd}", "/bin/bash", "-c", command]


def exec_environment(path: str, as_root: bool, extra: dict[str, str] | None) -> dict[str, str]:
    """A clean environment like a container's: nothing of the host's (API keys included)."""
    return {"PATH": path, "HOME": "/root" if as_root else "/tmp", "LANG": "C.UTF-8",
            **(extra or {})}
