"""Another tool in a venv of its own under the cache, made by the tests that read their output
with it (ragas, nel, AIPerf): each pins dependencies the project's environment cannot hold
(or should not: a reader is checked as users run it, apart from bankbench)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from bankbench.paths import cache_dir
from bankbench.serve.dynamo_venv import BYTECODE_MARKER, compile_once
from bankbench.serve.locking import file_lock

_DONE = ".bankbench-complete"


def tool_python(name: str, pins: list[str]) -> Path:
    """`<cache>/<name>/bin/python` with `pins` installed, created on first use under a lock
    (uv when there is one, else venv + pip); a half-made venv is made again."""
    venv = cache_dir() / name
    python = venv / "bin" / "python"
    with file_lock(venv.parent / f"{venv.name}.lock"):
        if (venv / _DONE).exists() and python.exists():
            # Its packages compiled: a tool started with bytecode not written at run time
            # compiled its imports from source at every start (nel's 1.7-2.1 -> 0.8-1.1 CPU-s,
            # 2-core host). A venv made before its bytecode was is compiled once.
            compile_once(python, venv)
            return python
        shutil.rmtree(venv, ignore_errors=True)
        base = getattr(sys, "_base_executable", None) or sys.executable
        uv = shutil.which("uv")
        if uv:
            steps = [[uv, "venv", "-q", "--python", base, str(venv)],
                     [uv, "pip", "install", "-q", "--compile-bytecode", "--python", str(python),
                      *pins]]
        else:
            steps = [[base, "-m", "venv", str(venv)],
                     [str(python), "-m", "pip", "install", "-q", *pins]]
        for step in steps:
            done = subprocess.run(step, capture_output=True, text=True, timeout=900)
            if done.returncode != 0:
                raise RuntimeError(f"{' '.join(step[:3])} failed: {done.stderr[-2000:]}")
        (venv / _DONE).write_text(" ".join(pins) + "\n")
        (venv / BYTECODE_MARKER).write_text("installer\n")  # uv and pip both compiled it
        return python
