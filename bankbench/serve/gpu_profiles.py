"""GPU profiles: YAML files in dynamo/profiles/, validated into `GpuProfile`, with overrides.

`load_profile("gpu-vllm", {"worker.tp": "2", "image": "…"})` reads the YAML, applies each
`--set key=value` (values parsed as YAML scalars/lists; shortcuts `tp`, `gpus`, `workers`,
`extra_args` mean `worker.<key>` on aggregated profiles) and validates the result; any bad key
or value raises ServeError naming the key.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from bankbench.paths import dynamo_assets
from bankbench.serve.base import ROUTER_MODES
from bankbench.serve.errors import ServeError

GROUP_SHORTCUTS = ("workers", "tp", "gpus", "extra_args")


def _split(value: object) -> object:
    return shlex.split(value) if isinstance(value, str) else value


class WorkerGroup(BaseModel):
    """Workers of one role; each gets `tp` GPUs of its own."""

    model_config = ConfigDict(extra="forbid")

    workers: int = Field(default=1, ge=1, description="number of worker containers")
    tp: int = Field(default=1, ge=1, description="tensor-parallel size = GPUs per worker")
    gpus: list[int] | None = Field(
        default=None, description="device ids for the group (workers × tp); null = next free"
    )
    extra_args: list[str] = Field(default_factory=list, description="extra engine arguments")

    _split_args = field_validator("extra_args", mode="before")(_split)

    @field_validator("gpus", mode="before")
    @classmethod
    def _gpu_list(cls, value: object) -> object:
        if isinstance(value, str):
            return [int(v) for v in value.replace(" ", "").split(",") if v]
        if isinstance(value, int):
            return [value]
        return value

    @model_validator(mode="after")
    def _gpu_count(self) -> WorkerGroup:
        if self.gpus is not None and len(self.gpus) != self.workers * self.tp:
            raise ValueError(
                f"gpus lists {len(self.gpus)} devices but workers × tp = {self.workers * self.tp}"
            )
        return self


class GpuProfile(BaseModel):
    """One GPU server profile (see the YAML files for the meaning of each key)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    engine: Literal["sglang", "vllm"]
    image: str = Field(min_length=1)
    model: str = Field(min_length=1, description="HF id or container path")
    served_model_name: str | None = None
    router: str = "round-robin"
    kv_events: bool = True
    tool_call_parser: str | None = None
    reasoning_parser: str | None = None
    discovery: Literal["file", "etcd"] = "file"
    frontend_port: int | None = Field(
        default=None, ge=1, le=65535, description="null: 8000 if free, else the next free port")
    hf_cache: str = "~/.cache/huggingface"
    run_as: Literal["image", "root"] = Field(
        default="image", description="image: the image's user `dynamo` (UID 1000), cache at its "
        "HOME; root: as root, cache at /root")
    max_model_len: int | Literal["auto"] | None = Field(
        default=None, description="engine context length; auto: the longest that leaves room "
        "on the GPUs found (vLLM); null: the engine's default")
    gpu_memory_gib: float | None = Field(
        default=None, gt=0, description="memory per GPU for max_model_len=auto; null: nvidia-smi")
    worker: WorkerGroup | None = None
    prefill: WorkerGroup | None = None
    decode: WorkerGroup | None = None
    frontend_args: list[str] = Field(default_factory=list)
    etcd_image: str = "quay.io/coreos/etcd:v3.5.21"
    nats_image: str = "nats:2.11"
    start_timeout_s: float = Field(default=1800.0, gt=0, description="model download + load")
    deterministic: bool = Field(
        default=False, description="batch-invariant kernels, so temperature-0 replies do not "
        "depend on what else is batched (vLLM: VLLM_BATCH_INVARIANT=1; SGLang: "
        "--enable-deterministic-inference); slower, a control arm for decision noise")

    _split_args = field_validator("frontend_args", mode="before")(_split)

    @field_validator("router")
    @classmethod
    def _router(cls, value: str) -> str:
        if value not in ROUTER_MODES:
            raise ValueError(f"unknown router (known: {', '.join(ROUTER_MODES)})")
        return value

    @field_validator("tool_call_parser", "reasoning_parser", "served_model_name",
                     "max_model_len", mode="before")
    @classmethod
    def _none_word(cls, value: object) -> object:
        return None if value in ("", "none", "null") else value

    @model_validator(mode="after")
    def _groups(self) -> GpuProfile:
        disagg = self.prefill is not None or self.decode is not None
        if disagg and (self.prefill is None or self.decode is None or self.worker is not None):
            raise ValueError("a disaggregated profile needs prefill and decode and no worker")
        if not disagg and self.worker is None:
            raise ValueError("an aggregated profile needs a worker group")
        if disagg and self.engine != "sglang":
            raise ValueError("disaggregated profiles are built for engine sglang only")
        used = [g for grp in self.groups().values() for g in (grp.gpus or [])]
        if len(used) != len(set(used)):
            raise ValueError(f"GPU sets overlap: {sorted(used)}")
        return self

    def groups(self) -> dict[str, WorkerGroup]:
        """Role → group: {"worker": …} or {"prefill": …, "decode": …}."""
        out = {"worker": self.worker, "prefill": self.prefill, "decode": self.decode}
        return {k: v for k, v in out.items() if v is not None}

    @property
    def disaggregated(self) -> bool:
        return self.worker is None

    @property
    def served_name(self) -> str:
        return self.served_model_name or self.model


def profile_path(name: str) -> Path:
    return dynamo_assets() / "profiles" / f"{name}.yaml"


def _set_key(raw: dict, key: str, text: str, disaggregated: bool) -> None:
    parts = key.split(".")
    if len(parts) == 1 and parts[0] in GROUP_SHORTCUTS:
        if disaggregated:
            raise ServeError(f"--set {key}: ambiguous on a disaggregated profile; "
                             f"use prefill.{key} or decode.{key}")
        parts = ["worker", parts[0]]
    top = parts[0]
    if top not in GpuProfile.model_fields:
        known = ", ".join(sorted(set(GpuProfile.model_fields) - {"name"}))
        raise ServeError(f"unknown option {key!r} (known: {known}, worker.*, prefill.*, decode.*)")
    try:
        value = yaml.safe_load(text) if text != "" else ""
    except yaml.YAMLError:
        value = text
    if len(parts) == 1:
        raw[top] = value
        return
    if len(parts) != 2 or parts[1] not in WorkerGroup.model_fields:
        raise ServeError(f"unknown option {key!r} (group keys: "
                         f"{', '.join(WorkerGroup.model_fields)})")
    if not isinstance(raw.get(top), dict):
        raise ServeError(f"--set {key}: this profile has no {top} group")
    raw[top][parts[1]] = value


def load_profile(name: str, overrides: dict | None = None) -> GpuProfile:
    """Read `dynamo/profiles/<name>.yaml`, apply overrides, validate (ServeError names the key)."""
    path = profile_path(name)
    if not path.exists():
        raise ServeError(f"no profile file {path}")
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ServeError(f"{path}: not valid YAML ({exc})") from None
    disagg = "worker" not in raw
    for key, value in (overrides or {}).items():
        # API callers may pass typed values; JSON is YAML, so one parser serves both.
        _set_key(raw, key, value if isinstance(value, str) else json.dumps(value), disagg)
    try:
        return GpuProfile.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"] if not str(p).isdigit()) or "profile"
        raise ServeError(f"profile {name}: bad value for {loc}: {err['msg']}") from None
