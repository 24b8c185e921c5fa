"""What defines a sweep. Two runs with the same SweepConfig measure the same thing, which is
what `--resume` checks before it continues a sweep directory."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, field_validator, model_validator

ENVIRONMENTS = {
    "local": "environments.local:LocalEnvironment",
    "docker": "docker",
}
AGENT_IMPORT_PATH = "agents.banking:BankingAgent"


class SweepConfig(BaseModel):
    levels: list[int] = Field(description="Concurrency levels, one Harbor job each (-n level).")
    attempts: int = Field(1, ge=1, description="Harbor attempts per task at each level (-k).")
    profile: str | None = Field(None, description="Server profile brought up for the sweep.")
    router: str | None = Field(
        None, description="Dynamo router mode for launched profiles (None: the profile's)."
    )
    workers: int | None = Field(
        None, ge=1, description="Engine workers for launched profiles (None: the profile's)."
    )
    server_options: dict[str, str] = Field(
        default_factory=dict, description="`--set key=value` overrides for the profile."
    )
    base_url: str | None = Field(None, description="OpenAI-compatible URL of an existing server.")
    model: str | None = Field(None, description="Served model name (profile default if None).")
    source: str = Field("auto", description="Dataset when tasks are built: auto|hf|sample|DIR.")
    tasks: str | None = Field(None, description="Existing task directory (skips building).")
    limit: int | None = Field(None, ge=1, description="Use only the first N scenarios.")
    mode: Literal["goals", "first-message"] = "goals"
    labels: str = "match"
    env: str = Field("local", description="Harbor environment: local | docker | module:Class.")
    agent_kwargs: dict[str, str] = Field(default_factory=dict, description="Extra --ak options.")

    @field_validator("levels")
    @classmethod
    def _levels(cls, v: list[int]) -> list[int]:
        if not v or any(n < 1 for n in v):
            raise ValueError("levels must be positive integers, e.g. 1,2,4,8")
        if len(set(v)) != len(v):
            raise ValueError(f"levels repeat a value: {v}")
        return v

    @model_validator(mode="after")
    def _server(self) -> SweepConfig:
        if bool(self.profile) == bool(self.base_url):
            raise ValueError("give exactly one of --profile (launch a server) or --base-url")
        if self.base_url and not self.model:
            raise ValueError("--base-url needs --model (the served model name)")
        return self

    @property
    def environment(self) -> str:
        return ENVIRONMENTS.get(self.env, self.env)

    def fingerprint(self) -> str:
        """Stable hash of everything that changes what is measured."""
        blob = json.dumps(self.model_dump(mode="json"), sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def differences(self, other: SweepConfig) -> list[str]:
        mine, theirs = self.model_dump(mode="json"), other.model_dump(mode="json")
        return [f"{k}: {theirs[k]!r} -> {mine[k]!r}" for k in mine if mine[k] != theirs.get(k)]


def level_dir_name(level: int) -> str:
    return f"c{level}"


def level_dir(sweep_dir: Path, level: int) -> Path:
    return sweep_dir / level_dir_name(level)
