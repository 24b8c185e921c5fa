"""llama.cpp's own OpenAI server, from the prebuilt xllamacpp wheel, as a second real engine.

Not bankbench's: llama.cpp's C++ HTTP server (`xllamacpp.Server`, started by the small script
`xllamacpp_http.py`) used the way the `external` profile uses any server (`--base-url`/
`--model`). The wheel is the one the cpu-tiny profile downloads and caches
(`bankbench.serve.llamacpp`); it goes into a venv of its own under the cache, made once (seconds,
nothing compiled), so the Dynamo venv is not touched. The model is SmolLM2-135M
(`bankbench.serve.smollm2`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from bankbench.paths import cache_dir
from bankbench.procs import free_port
from bankbench.serve import llamacpp, smollm2
from bankbench.serve.locking import file_lock

MODEL = smollm2.MODEL_NAME
SCRIPT = Path(__file__).with_name("xllamacpp_http.py")


def server_python() -> Path:
    """The interpreter of the server venv, made on first use (cached, safe concurrently)."""
    venv = cache_dir() / f"llamacpp-server-venv-{llamacpp.XLLAMACPP_VERSION}"
    python = venv / "bin" / "python"
    ready = venv / ".ready"
    if ready.exists():
        return python
    with file_lock(venv.with_suffix(".lock")):
        if ready.exists():
            return python
        from bankbench.serve.dynamo_venv import ensure_dynamo_venv

        wheel = llamacpp.fetch_wheel(ensure_dynamo_venv())  # any interpreter with pip
        uv = shutil.which("uv")
        assert uv, "uv is needed to make the server venv"
        shutil.rmtree(venv, ignore_errors=True)
        base = getattr(sys, "_base_executable", None) or sys.executable
        subprocess.run([uv, "venv", "-q", "-p", base, str(venv)], check=True)
        subprocess.run([uv, "pip", "install", "-q", "--offline", "-p", str(python), str(wheel)],
                       check=True)
        ready.write_text("ok\n")
    return python


@dataclass
class LlamaCppServer:
    base_url: str
    model: str
    log: Path


@contextmanager
def llamacpp_server(log_dir: Path, n_ctx: int = 8192, parallel: int = 1,
                    chat_template: Path | None = None) -> Iterator[LlamaCppServer]:
    """Start the server on a free port; stop it (this process only) on exit. `chat_template`:
    a Jinja template file in place of the model's (SmolLM2's own renders no tools, so
    llama.cpp then ignores them; one that does lets llama.cpp's own parser find the calls)."""
    port = free_port()
    cmd = [str(server_python()), str(SCRIPT), "--model", str(smollm2.gguf_path()),
           "--alias", MODEL, "--n-ctx", str(n_ctx), "--port", str(port),
           "--parallel", str(parallel), "--threads", "2",
           *(["--chat-template", str(chat_template)] if chat_template else [])]
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / f"llamacpp-{port}.log"
    with log.open("w") as out:
        # Threads sleep at barriers, as the cpu-tiny worker's do (dynamo/workers/
        # llamacpp_setup.py): spinning ones decode many times slower on a busy host.
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                env={"OMP_WAIT_POLICY": "PASSIVE", **os.environ,
                                     "PYTHONUNBUFFERED": "1"})
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"llama.cpp server exited: {log.read_text()[-1500:]}")
            try:  # 503 while the model loads
                if httpx.get(f"{base_url}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"llama.cpp server not ready in 120 s: {log}")
            time.sleep(0.5)
        yield LlamaCppServer(base_url, MODEL, log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
