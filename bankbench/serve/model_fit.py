"""How long a context fits on the GPUs found: `max_model_len: auto` of the GPU profiles.

vLLM refuses to start when one sequence of the model's full context does not fit in the KV cache
left beside the weights (Qwen3-8B: 40,960 tokens × 144 KiB = 5.6 GiB of KV after 15.3 GiB of
weights, which a 24 GB GPU at vLLM's 0.9 memory share does not have). Here the context is
sized from the model's own files (config.json and the safetensors index, read from the host's
Hugging Face cache or fetched into it — a few KB) and the GPU memory nvidia-smi reports.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from pydantic import BaseModel

GiB = 1024**3
DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4, "float8_e4m3fn": 1}


class ModelShape(BaseModel):
    """What the KV-cache arithmetic needs from a model's config and weight files."""

    layers: int
    kv_heads: int
    head_dim: int
    max_positions: int
    weight_bytes: int
    dtype_bytes: int = 2

    @property
    def kv_bytes_per_token(self) -> int:
        return 2 * self.layers * self.kv_heads * self.head_dim * self.dtype_bytes  # K and V


class GpuInfo(BaseModel):
    index: int
    name: str
    memory_mib: int
    driver: str


class FitError(ValueError):
    pass


def shape_from_files(config: dict, weight_bytes: int) -> ModelShape:
    text = config.get("text_config", config)  # multimodal configs nest the language model
    heads = text["num_attention_heads"]
    return ModelShape(
        layers=text["num_hidden_layers"],
        kv_heads=text.get("num_key_value_heads", heads),
        head_dim=text.get("head_dim") or text["hidden_size"] // heads,
        max_positions=text.get("max_position_embeddings", 4096),
        weight_bytes=weight_bytes,
        dtype_bytes=DTYPE_BYTES.get(str(text.get("torch_dtype", "bfloat16")), 2),
    )


def fit_context(shape: ModelShape, gpu_bytes: int, tp: int = 1, *, utilization: float = 0.9,
                reserve_bytes: int = 2 * GiB, sequences: int = 2) -> int:
    """The longest context (multiple of 1024, at most the model's own) such that `sequences`
    full-length sequences fit in the KV cache left on `tp` GPUs of `gpu_bytes` each, after
    the weights and `reserve_bytes` per GPU for activations and CUDA graphs."""
    budget = tp * (gpu_bytes * utilization - reserve_bytes) - shape.weight_bytes
    tokens = int(budget // (shape.kv_bytes_per_token * sequences)) if budget > 0 else 0
    length = min(shape.max_positions, tokens // 1024 * 1024)
    if length < 4096:
        raise FitError(
            f"the model's weights ({shape.weight_bytes / GiB:.1f} GiB) leave room for only "
            f"{max(tokens, 0)} tokens of context on {tp} × {gpu_bytes / GiB:.0f} GiB; use more "
            "GPUs (tp) or a smaller model")
    return length


def snapshot_dir(hf_cache: Path, model: str) -> Path | None:
    """The newest downloaded snapshot of `model` in a Hugging Face cache folder, if any."""
    repo = Path(hf_cache).expanduser() / "hub" / ("models--" + model.replace("/", "--"))
    snaps = sorted((repo / "snapshots").glob("*/config.json"), key=lambda p: p.stat().st_mtime)
    return snaps[-1].parent if snaps else None


def _weight_bytes(folder: Path) -> int | None:
    index = folder / "model.safetensors.index.json"
    if index.exists():
        return int(json.loads(index.read_text())["metadata"]["total_size"])
    single = folder / "model.safetensors"
    return single.stat().st_size if single.exists() else None


def model_shape(model: str, hf_cache: Path, token: str | None = None, *,
                fetch: bool = True) -> ModelShape:
    """From a local folder, the host's HF cache, or (`fetch`) fetched into that cache."""
    folder = Path(model) if Path(model).is_dir() else snapshot_dir(hf_cache, model)
    if folder is None or _weight_bytes(folder) is None:
        if not fetch:
            raise FitError(f"{model} is not in {hf_cache} yet")
        try:
            from huggingface_hub import hf_hub_download
            from huggingface_hub.errors import EntryNotFoundError

            cache = Path(hf_cache).expanduser() / "hub"
            config = Path(hf_hub_download(model, "config.json", cache_dir=cache, token=token))
            folder = config.parent
            try:
                hf_hub_download(model, "model.safetensors.index.json", cache_dir=cache,
                                token=token)
            except EntryNotFoundError:
                pass
        except Exception as exc:  # offline, gated, unknown repo: the caller says what to do
            raise FitError(f"cannot read {model}'s config ({type(exc).__name__})") from None
    weights = _weight_bytes(folder)
    if weights is None:
        raise FitError(f"cannot tell the size of {model}'s weights from {folder}")
    return shape_from_files(json.loads((folder / "config.json").read_text()), weights)


def gpus() -> list[GpuInfo]:
    """The host's NVIDIA GPUs per nvidia-smi; [] when there is no driver."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return []
    try:
        out = subprocess.run(
            [exe, "--query-gpu=index,name,memory.total,driver_version",
             "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=20,
            check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    found = []
    for line in out.strip().splitlines():
        index, name, mem, driver = (part.strip() for part in line.split(","))
        found.append(GpuInfo(index=int(index), name=name, memory_mib=int(float(mem)),
                             driver=driver))
    return found
