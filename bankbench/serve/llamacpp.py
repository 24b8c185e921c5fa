"""llama-cpp-python for the cpu-tiny worker: built once, portably, then installed from a cache.

llama-cpp-python ships as source only, and compiling it takes 3–6 minutes on 2 cores. The
build here is portable (no `-march=native`: the native build was seen to crash in decode on
some VMs) and its wheel is kept under `<cache>/wheels/`, so later venvs and later starts only
install it (seconds). A lock file makes concurrent callers wait for one build.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bankbench.paths import cache_dir
from bankbench.serve.errors import ServeError
from bankbench.serve.locking import file_lock

LLAMA_CPP_VERSION = "0.3.36"
PACKAGE = f"llama-cpp-python=={LLAMA_CPP_VERSION}"

# x86-64 with AVX2 (any server CPU of the last decade), nothing newer; ARM keeps defaults.
PORTABLE_CMAKE_ARGS = (
    "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON "
    "-DGGML_BMI2=ON -DGGML_AVX512=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_TILE=OFF"
)


def _cmake_args() -> str:
    if platform.machine().lower() in ("x86_64", "amd64"):
        return PORTABLE_CMAKE_ARGS
    return "-DGGML_NATIVE=OFF"


def wheel_dir() -> Path:
    """Where the built wheel is kept; the name changes with the version and build flags."""
    key = hashlib.sha256(f"{PACKAGE} {platform.machine()} {_cmake_args()}".encode())
    return cache_dir() / "wheels" / f"llama-cpp-python-{LLAMA_CPP_VERSION}-{key.hexdigest()[:10]}"


def _say(msg: str) -> None:
    print(f"bankbench: {msg}", file=sys.stderr, flush=True)


def _installed(venv_python: Path) -> bool:
    """True when the venv already holds this version (a dist-info lookup, no interpreter start)."""
    venv = venv_python.parent.parent
    dist = f"llama_cpp_python-{LLAMA_CPP_VERSION}.dist-info"
    return any(venv.glob(f"lib/python3*/site-packages/{dist}"))


def _cached_wheel() -> Path | None:
    wheels = sorted(wheel_dir().glob("llama_cpp_python-*.whl"))
    return wheels[0] if wheels else None


def _pip_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    for var in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PIP_REQUIRE_VIRTUALENV"):
        env.pop(var, None)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env.update(extra or {})
    return env


def _fail(what: str, log: Path) -> ServeError:
    tail = "\n".join(log.read_text(errors="replace").splitlines()[-25:])
    return ServeError(f"cpu-tiny: {what} failed (full log {log})", tail, "llama-cpp-python")


def _run_logged(cmd: list[str], log: Path, env: dict[str, str], label: str) -> int:
    """Run `cmd` with output to `log`, printing a heartbeat every 30 s while it runs."""
    started = time.monotonic()
    done = threading.Event()

    def heartbeat() -> None:
        while not done.wait(30):
            _say(f"{label}… {time.monotonic() - started:.0f} s")

    ticker = threading.Thread(target=heartbeat, daemon=True)
    ticker.start()
    try:
        with log.open("a") as fh:
            fh.write("$ " + " ".join(cmd) + "\n")
            fh.flush()
            return subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env).returncode
    finally:
        done.set()


def build_wheel(python: Path) -> Path:
    """Compile the wheel with `python`'s pip into the cache (call with the lock held)."""
    target = wheel_dir()
    target.mkdir(parents=True, exist_ok=True)
    log = target / "build.log"
    log.write_text("")
    cores = os.cpu_count() or 1
    _say(f"building {PACKAGE} once (~5 min on 2 cores; this machine has {cores}); log {log}")
    started = time.monotonic()
    env = _pip_env({"CMAKE_ARGS": _cmake_args(), "CMAKE_BUILD_PARALLEL_LEVEL": str(cores)})
    with tempfile.TemporaryDirectory(dir=target) as tmp:
        # --no-cache-dir: pip's own wheel cache ignores CMAKE_ARGS and could hand back a
        # native build made elsewhere.
        cmd = [str(python), "-m", "pip", "wheel", "--no-deps", "--no-cache-dir", PACKAGE, "-w", tmp]
        code = _run_logged(cmd, log, env, f"still building {PACKAGE}")
        built = list(Path(tmp).glob("llama_cpp_python-*.whl"))
        if code != 0 or not built:
            raise _fail(f"building {PACKAGE}", log)
        final = target / built[0].name
        shutil.move(str(built[0]), final)
    _say(f"built {final.name} in {time.monotonic() - started:.0f} s (cached in {target})")
    return final


def _base_python_with_pip() -> Path | None:
    base = Path(getattr(sys, "_base_executable", None) or sys.executable)
    probe = subprocess.run([str(base), "-m", "pip", "--version"], capture_output=True)
    return base if probe.returncode == 0 else None


def start_wheel_build() -> threading.Thread | None:
    """Begin compiling the wheel in the background while other set-up (venv, model) goes on.

    The wheel is pure `py3-none`, so any interpreter with pip can build it. Returns the thread,
    or None when the wheel is cached or no interpreter with pip is at hand (the build then
    happens in `ensure_llama_cpp`). A failure here is left for `ensure_llama_cpp` to report.
    """
    if _cached_wheel() is not None:
        return None
    python = _base_python_with_pip()
    if python is None:
        return None

    def build() -> None:
        with file_lock(_lock_path()):
            if _cached_wheel() is None:
                try:
                    build_wheel(python)
                except ServeError:
                    pass  # ensure_llama_cpp retries with the venv's pip and reports

    thread = threading.Thread(target=build, name="llama-cpp-wheel", daemon=True)
    thread.start()
    return thread


def _lock_path() -> Path:
    return wheel_dir().parent / f"{wheel_dir().name}.lock"


def ensure_llama_cpp(venv_python: Path) -> None:
    """Make `import llama_cpp` work in the venv of `venv_python`, building the wheel only once.

    Idempotent and safe to call from several processes at once. Raises ServeError (with the
    build or install log's last lines) when the package cannot be built or installed.
    """
    venv_python = Path(venv_python)
    if _installed(venv_python):
        return
    with file_lock(_lock_path()):
        if _installed(venv_python):
            return
        wheel = _cached_wheel() or build_wheel(venv_python)
        log = wheel_dir() / "install.log"
        log.write_text("")
        _say(f"installing {wheel.name} into {venv_python.parent.parent}")
        cmd = [str(venv_python), "-m", "pip", "install", "--quiet", str(wheel)]
        if _run_logged(cmd, log, _pip_env(), f"installing {PACKAGE}") != 0:
            raise _fail(f"installing {wheel.name}", log)
        check = [str(venv_python), "-c", "import llama_cpp"]
        if _run_logged(check, log, _pip_env(), "checking llama_cpp") != 0:
            raise _fail("importing llama_cpp after install", log)
