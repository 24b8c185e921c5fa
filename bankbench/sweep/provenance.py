"""How a result was made: package versions and the git commit of bankbench itself."""

from __future__ import annotations

import subprocess
from importlib import metadata

from bankbench.paths import REPO_ROOT


def package_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def git_sha() -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"],
            capture_output=True, text=True, timeout=5, check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, timeout=5,
        ).stdout.strip()
        return out + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


def versions(server: dict[str, str] | None = None) -> dict[str, str | None]:
    """This side's packages plus what the server stack reported about itself.

    `server` is `ServerState.versions` of a stack bankbench launched; a `--base-url` server
    tells nothing, so its entries stay None rather than being guessed.
    """
    return {
        "bankbench": package_version("bankbench"),
        "harbor": package_version("harbor"),
        "ai-dynamo": None,
        **(server or {}),
    }
