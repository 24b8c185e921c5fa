"""The Dynamo virtual environment: ai-dynamo 1.6.1 installed apart from the project venv.

Dynamo is a server with its own import name (`dynamo`) and heavy pins, so it lives in its own
venv under the cache. A plain `pip install ai-dynamo` pulls a stub dependency that downloads from
an unreachable host, so the wheels go in with `--no-deps` and their real dependencies are listed
here by hand.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

from bankbench.paths import cache_dir
from bankbench.serve.locking import file_lock

DYNAMO_VERSION = "1.6.1"

DYNAMO_WHEELS = [f"ai-dynamo-runtime=={DYNAMO_VERSION}", f"ai-dynamo=={DYNAMO_VERSION}"]

# The runtime dependencies ai-dynamo really needs, plus gguf/tokenizers to build model folders.
DYNAMO_DEPS = [
    "pydantic>=2.10.6,<=2.13.5",
    "uvloop>=0.21",
    "aiohttp>=3.14.3,<4",
    "certifi",
    "kubernetes>=32.0.1,<33",
    "msgspec>=0.19",
    "prometheus-client>=0.23.1,<1",
    "pyzmq>=26",
    "redis>=6.2,<9",
    "tqdm",
    "transformers>=4.56",
    "typing-extensions>=4.10",
    "zstandard>=0.23,<1",
    "jinja2",
    "gguf",
    "tokenizers",
]

_DONE_MARKER = ".bankbench-complete"
# Written once the venv's packages are compiled to bytecode: where bytecode is not written at
# run time (PYTHONDONTWRITEBYTECODE) a frontend and a mocker compiled Dynamo's modules from
# source at every start (~1.1 CPU-s of a stack's ~3.7 to ready, measured on the 2-core host).
BYTECODE_MARKER = ".bankbench-bytecode"


class DynamoVenvError(RuntimeError):
    """The Dynamo venv could not be created."""


def dynamo_venv_dir() -> Path:
    return cache_dir() / f"dynamo-venv-{DYNAMO_VERSION}"


def _venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def _base_python() -> str:
    # The interpreter behind the current venv; Dynamo 1.6.1 wheels need CPython >= 3.10.
    return getattr(sys, "_base_executable", None) or sys.executable


def _run(cmd: list[str], log: Path) -> None:
    with log.open("a") as fh:
        fh.write("$ " + " ".join(cmd) + "\n")
        fh.flush()
        proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, env=_pip_env())
    if proc.returncode != 0:
        tail = log.read_text(errors="replace").splitlines()[-15:]
        raise DynamoVenvError(
            f"'{' '.join(cmd[:4])} …' failed (exit {proc.returncode}); log {log}:\n"
            + "\n".join(tail)
        )


def _pip_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("VIRTUAL_ENV", None)
    env.pop("PYTHONPATH", None)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["UV_PYTHON_DOWNLOADS"] = "never"  # the interpreter is given; never fetch another
    return env


def _uv() -> str | None:
    """uv, when set-up put it on this machine (scripts/bootstrap.sh does): it installs the ~100
    packages in parallel from its cache, many times faster than pip. BANKBENCH_INSTALLER=pip
    forces pip."""
    if os.environ.get("BANKBENCH_INSTALLER", "").lower() == "pip":
        return None
    home_uv = Path.home() / ".local" / "bin" / "uv"
    return shutil.which("uv") or (str(home_uv) if home_uv.is_file() else None)


def _installers(venv: Path) -> tuple[list[str], list[str], str]:
    """(make the venv, install into it, which tool): uv when there is one, else venv + pip.
    uv's venv is seeded with pip, which later installs (the llama.cpp wheel) use."""
    python = str(_venv_python(venv))
    uv = _uv()
    if uv:
        return ([uv, "venv", "--quiet", "--seed", "--python", _base_python(), str(venv)],
                [uv, "pip", "install", "--quiet", "--compile-bytecode", "--python", python],
                "uv")
    return ([_base_python(), "-m", "venv", str(venv)],
            [python, "-m", "pip", "install", "--quiet"], "pip")


def ensure_dynamo_venv(progress: bool = True) -> Path:
    """Return the python of the Dynamo venv, creating it on first use (seconds with uv,
    about 25–60 s with pip).

    Idempotent: a marker file records a finished install; a lock file makes concurrent callers
    (parallel tests, two shells) wait for one builder instead of racing.
    """
    venv = dynamo_venv_dir()
    python = _venv_python(venv)
    if all(p.exists() for p in (venv / _DONE_MARKER, venv / BYTECODE_MARKER, python)):
        return python
    with file_lock(venv.parent / f"{venv.name}.lock"):
        if (venv / _DONE_MARKER).exists() and python.exists():
            compile_once(python, venv)  # made before its bytecode was
            return python
        say = (lambda m: print(f"bankbench: {m}", file=sys.stderr, flush=True)) if progress else (
            lambda m: None
        )
        started = time.monotonic()
        venv.parent.mkdir(parents=True, exist_ok=True)
        log = venv.parent / f"{venv.name}.install.log"
        log.write_text("")
        if venv.exists():
            say(f"removing unfinished Dynamo venv {venv}")
            subprocess.run(["rm", "-rf", str(venv)], check=False)
        make, pip, tool = _installers(venv)
        say(f"creating the Dynamo {DYNAMO_VERSION} venv at {venv} with {tool} (once per "
            f"machine; log {log})")
        _run(make, log)
        say("installing ai-dynamo wheels (--no-deps)")
        _run([*pip, "--no-deps", *DYNAMO_WHEELS], log)
        say("installing Dynamo's runtime dependencies")
        _run([*pip, *DYNAMO_DEPS], log)
        _run([str(python), "-c", "import dynamo.frontend, dynamo.mocker, gguf, tokenizers"], log)
        (venv / _DONE_MARKER).write_text(DYNAMO_VERSION + "\n")
        (venv / BYTECODE_MARKER).write_text(tool + "\n")  # uv and pip both compiled it
        say(f"Dynamo venv ready in {time.monotonic() - started:.0f} s")
        return python


def compile_once(python: Path, venv: Path) -> None:
    """Compile a finished venv's packages with its own `python`, unless its BYTECODE_MARKER
    says they are (call under the venv's lock). compileall's own errors, e.g. a package's
    Python 2 test files, are left as uv and pip leave them: never imported."""
    if (venv / BYTECODE_MARKER).exists():
        return
    subprocess.run([str(python), "-m", "compileall", "-q", "-j", "0", str(venv / "lib")],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_pip_env())
    (venv / BYTECODE_MARKER).write_text("compileall\n")


def installed_versions(python: Path, names: tuple[str, ...] = ("ai-dynamo",)) -> dict[str, str]:
    """Versions of `names` installed in the venv of `python`, read from its package metadata.

    What the server really runs, not what this module meant to install; a package that is not
    there is left out rather than guessed.
    """
    venv = Path(python).parent.parent
    site = [str(p) for p in venv.glob("lib/python*/site-packages")]
    found: dict[str, str] = {}
    for name in names:
        dist = next(iter(metadata.distributions(name=name, path=site)), None)
        if dist is not None:
            found[name] = dist.version
    return found
