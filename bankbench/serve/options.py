"""Per-profile options (`--set key=value` on the CLI, `options={…}` in the API), validated.

Each local profile has one pydantic model; unknown keys and bad values become a ServeError
whose message names the key.
"""

from __future__ import annotations

import difflib
import shlex
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from bankbench.serve.errors import ServeError


def _split_args(value: object) -> object:
    # Extra CLI arguments arrive as one string from --set; keep lists as they are.
    return shlex.split(value) if isinstance(value, str) else value


class _Options(BaseModel):
    model_config = ConfigDict(extra="forbid")

    frontend_args: list[str] = Field(
        default_factory=list, description="extra `python -m dynamo.frontend` arguments"
    )
    router_session_affinity_ttl_secs: int | None = Field(
        default=None, ge=1, description="pin an x-dynamo-session-id to one worker for this idle TTL"
    )
    start_timeout_s: float = Field(default=120.0, gt=0, description="readiness deadline")

    _split = field_validator("frontend_args", mode="before")(_split_args)


class MockerOptions(_Options):
    """cpu-mocker: the Dynamo mocker engine (simulated timing, optional scripted outputs)."""

    speedup_ratio: float = Field(
        default=1.0, gt=0,
        description="Simulated time is divided by this; 1000 makes replies near-instant "
        "(0 does not remove the delays in Dynamo 1.6.1, so it is refused)",
    )
    replay_trace: Path | None = Field(default=None, description="response-replay trace JSONL")
    scripted: bool = Field(
        default=True,
        description="a sweep or capacity search that starts this stack serves each task's "
        "oracle tool calls (then an answer) through a replay trace, so the agent makes "
        "decisions; false: the mocker's random tokens, timing only (bankbench serve up never "
        "scripts: it has no tasks)")
    tool_call_parser: str | None = Field(default="hermes", description="model-card tool parser")
    reasoning_parser: str | None = Field(default=None, description="model-card reasoning parser")
    model_path: Path | None = Field(
        default=None, description="model folder (tokenizer + config); default SmolLM2-135M's"
    )
    mocker_args: list[str] = Field(
        default_factory=list, description="extra `python -m dynamo.mocker` arguments"
    )
    request_trace: bool = Field(
        default=False, description="Dynamo's request trace (one request_end line per request) "
        "into <state_dir>/request_trace.jsonl; a sweep copies each level's lines into it"
    )
    worker_speedup_ratios: list[float] = Field(
        default_factory=list,
        description="per-worker speedup ratio, in worker order (e.g. '1 1 1 0.25' makes "
        "worker 3 four times slower; each worker then runs as its own process); workers "
        "beyond the list use speedup_ratio",
    )
    router_seed: int = Field(default=0, description="router thompson: sampling seed")
    router_args: list[str] = Field(
        default_factory=list,
        description="router thompson: extra dynamo/routers/thompson_router.py arguments "
        "(policy weights, e.g. '--overlap-weight 2')",
    )

    _split_mocker = field_validator("mocker_args", "router_args", mode="before")(_split_args)

    @field_validator("worker_speedup_ratios", mode="before")
    @classmethod
    def _ratios(cls, value: object) -> object:
        return value.replace(",", " ").split() if isinstance(value, str) else value

    @field_validator("worker_speedup_ratios")
    @classmethod
    def _positive(cls, value: list[float]) -> list[float]:
        if any(r <= 0 for r in value):
            raise ValueError("every ratio must be > 0")
        return value

    @field_validator("replay_trace", "model_path")
    @classmethod
    def _must_exist(cls, value: Path | None) -> Path | None:
        if value is not None and not Path(value).exists():
            raise ValueError(f"{value} does not exist")
        return None if value is None else Path(value).resolve()

    @field_validator("tool_call_parser", "reasoning_parser", mode="before")
    @classmethod
    def _none_word(cls, value: object) -> object:
        return None if value in ("", "none", "None") else value


class TinyOptions(_Options):
    """cpu-tiny: a real tiny GGUF model through the llama.cpp worker."""

    start_timeout_s: float = Field(default=300.0, gt=0, description="readiness deadline")
    gguf: Path | None = Field(default=None, description="GGUF file; default SmolLM2-135M's")
    model_path: Path | None = Field(
        default=None, description="tokenizer/template folder; default built from the GGUF"
    )
    tool_call_parser: str | None = Field(default="hermes", description="model-card tool parser")
    parallel: int | None = Field(
        default=None, ge=1, le=64,
        description="requests each worker decodes together (llama.cpp slots); default the "
        "worker's 4",
    )
    prompt_cache: bool = Field(
        default=False,
        description="keep a long prompt's KV across server starts (<cache>/llamacpp-prompts, "
        "keyed by model file, engine version and context) and load it into every slot at "
        "start: a new server's first request sharing that prefix skips its cold read; off by "
        "default so slots start empty",
    )
    worker_args: list[str] = Field(
        default_factory=list, description="extra llama.cpp worker arguments"
    )

    _split_worker = field_validator("worker_args", mode="before")(_split_args)

    @field_validator("gguf", "model_path")
    @classmethod
    def _must_exist(cls, value: Path | None) -> Path | None:
        if value is not None and not Path(value).exists():
            raise ValueError(f"{value} does not exist")
        return None if value is None else Path(value).resolve()


def parse_set_args(pairs: list[str]) -> dict[str, str]:
    """`["a=1", "b=x y"]` → `{"a": "1", "b": "x y"}`; a pair without '=' is an error."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ServeError(f"--set {pair!r}: expected key=value")
        out[key.strip()] = value
    return out


def validate_options[T: BaseModel](model: type[T], raw: dict | None, profile: str) -> T:
    """Validate `raw` into `model`; the error names the first bad key and why."""
    try:
        return model.model_validate(raw or {})
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"]) or "?"
        if err["type"] == "extra_forbidden":
            known = ", ".join(sorted(model.model_fields))
            close = difflib.get_close_matches(key, list(model.model_fields), n=1)
            hint = f"did you mean {close[0]}? " if close else ""
            raise ServeError(
                f"unknown option {key!r} for profile {profile} ({hint}known: {known})"
            ) from None
        value = (raw or {}).get(key)
        raise ServeError(
            f"bad option {key}={value!r} for profile {profile}: {err['msg']}"
        ) from None
