"""llama.cpp for the cpu-tiny worker: the prebuilt `xllamacpp` wheel, installed, never compiled.

`xllamacpp` (MIT) packages llama.cpp's own C++ server engine (parallel slots, continuous
batching, prompt cache, LLGuidance grammars) as a manylinux abi3 wheel on PyPI. It is fetched
once with `pip download --only-binary=:all:` into `<cache>/wheels/`, so an index that could only
offer a source build fails loudly instead of compiling, and later venvs install the cached file
(seconds). A lock file makes concurrent callers fetch once.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bankbench.paths import cache_dir
from bankbench.serve.errors import ServeError
from bankbench.serve.locking import file_lock

XLLAMACPP_VERSION = "2026.10.11549"
PACKAGE = f"xllamacpp=={XLLAMACPP_VERSION}"
COMPONENT = "xllamacpp"


def wheel_dir() -> Path:
    """Where the downloaded wheel is kept (one folder per pinned version)."""
    return cache_dir() / "wheels" / f"xllamacpp-{XLLAMACPP_VERSION}"


def _say(msg: str) -> None:
    print(f"bankbench: {msg}", file=sys.stderr, flush=True)


def installed(venv_python: Path) -> bool:
    """True when the venv already holds this version (a dist-info lookup, no interpreter start)."""
    venv = Path(venv_python).parent.parent
    dist = f"xllamacpp-{XLLAMACPP_VERSION}.dist-info"
    return any(venv.glob(f"lib/python3*/site-packages/{dist}"))


def cached_wheel() -> Path | None:
    wheels = sorted(wheel_dir().glob("xllamacpp-*.whl"))
    return wheels[0] if wheels else None


def _pip_env() -> dict[str, str]:
    env = dict(os.environ)
    for var in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PIP_REQUIRE_VIRTUALENV"):
        env.pop(var, None)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _run(cmd: list[str], log: Path, what: str) -> None:
    with log.open("a") as fh:
        fh.write("$ " + " ".join(cmd) + "\n")
        fh.flush()
        code = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, env=_pip_env()).returncode
    if code != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-25:])
        raise ServeError(f"cpu-tiny: {what} failed (full log {log})", tail, COMPONENT)


def fetch_wheel(python: Path) -> Path:
    """The prebuilt wheel for `python`'s platform, downloaded once into the cache."""
    target = wheel_dir()
    target.mkdir(parents=True, exist_ok=True)
    with file_lock(target.parent / f"{target.name}.lock"):
        wheel = cached_wheel()
        if wheel is not None:
            return wheel
        log = target / "download.log"
        log.write_text("")
        _say(f"downloading the prebuilt {PACKAGE} wheel (~34 MB, nothing to compile)")
        with tempfile.TemporaryDirectory(dir=target) as tmp:
            # --only-binary: where no wheel fits this platform, fail rather than compile.
            cmd = [str(python), "-m", "pip", "download", "--quiet", "--no-deps",
                   "--only-binary=:all:", PACKAGE, "-d", tmp]
            _run(cmd, log, f"downloading {PACKAGE}")
            found = list(Path(tmp).glob("xllamacpp-*.whl"))
            if not found:
                raise ServeError(f"cpu-tiny: pip found no {PACKAGE} wheel", "", COMPONENT)
            wheel = target / found[0].name
            shutil.move(str(found[0]), wheel)
        return wheel


def ensure_xllamacpp(venv_python: Path) -> str | None:
    """Make `import xllamacpp` work in the venv of `venv_python`; return the wheel installed.

    None when the venv already had it. Idempotent and safe to call from several processes at
    once. Raises ServeError (with pip's last lines) when the wheel cannot be fetched or installed.
    """
    venv_python = Path(venv_python)
    if installed(venv_python):
        return None
    wheel = fetch_wheel(venv_python)
    with file_lock(wheel_dir().parent / f"{wheel_dir().name}.install.lock"):
        if installed(venv_python):
            return None
        log = wheel_dir() / "install.log"
        log.write_text("")
        _say(f"installing prebuilt wheel {wheel.name} into {venv_python.parent.parent}")
        _run([str(venv_python), "-m", "pip", "install", "--quiet", "--no-deps", str(wheel)],
             log, f"installing {wheel.name}")
        _run([str(venv_python), "-c", "import xllamacpp"], log, "importing xllamacpp")
    return wheel.name
