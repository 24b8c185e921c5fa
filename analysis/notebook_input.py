"""What a notebook in analysis/notebooks/ reads: a job or sweep directory the user named, or the
synthetic demo when asked for it by name — never made-up data in place of a missing path.

A relative path is taken from the directory Jupyter was started in, not from the notebook's
folder (the kernel runs there): `jupyter lab analysis/notebooks/` started at the repository root
reads `jobs/my-sweep` as `<repo>/jobs/my-sweep`. That directory is the shell's `$PWD`, which the
server and its kernels inherit unchanged.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

DEMO = "demo"


def start_dir() -> Path:
    """Where the user started Jupyter (their shell's $PWD), else the working directory."""
    pwd = os.environ.get("PWD")
    return Path(pwd) if pwd and Path(pwd).is_dir() else Path.cwd()


def run_path(value: str | os.PathLike | None, *, name: str,
             demo: Callable[[Path], Path]) -> Path:
    """The directory parameter `name` of a notebook names. `"demo"` writes the synthetic demo
    (`demo(folder)`) to a temporary folder and says so; a missing path is an error that says
    where it was looked for."""
    if value is None:
        raise ValueError(
            f"set {name} to a Harbor job or sweep directory, e.g. {name} = "
            f"'jobs/sweep-20261122-231500', or {name} = {DEMO!r} for a synthetic example"
        )
    if str(value) == DEMO:
        path = demo(Path(tempfile.mkdtemp()))
        print(f"{name}: SYNTHETIC demo data in {path} (made-up numbers, not a measurement)")
        return path
    path = Path(value).expanduser()
    if not path.is_absolute():
        path = start_dir() / path
    if not path.is_dir():
        raise FileNotFoundError(
            f"{name} = {str(value)!r}: no such directory {path} (a relative path is taken from "
            f"{start_dir()}, where Jupyter was started)"
        )
    return path
