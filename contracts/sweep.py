"""`jobs/<sweep>/sweep.json`: what a sweep ran, against what, and how far it got.

Written by the sweep loop (bankbench/sweep/runner.py) at start, after every level and at the
end; read by analysis to label each level's Harbor job. One Harbor job per level lives in
`<sweep>/c<level>/`, with `metrics_before.prom` / `metrics_after.prom` beside its trials when the
server exposes Prometheus /metrics.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

SWEEP_FILE = "sweep.json"
METRICS_BEFORE = "metrics_before.prom"
METRICS_AFTER = "metrics_after.prom"


class LevelRecord(BaseModel):
    level: int = Field(description="Configured concurrency (harbor -n).")
    job_dir: str = Field(description="Harbor job folder, relative to the sweep dir (c<level>).")
    state: str = Field("pending", description="pending | running | complete | failed")
    started_at: datetime | None = None
    finished_at: datetime | None = None
    resumed: bool = Field(
        False, description="Continued after an interruption: the /metrics diff covers only the "
        "part run after resuming (metrics_before.prom is re-scraped then).",
    )
    metrics: bool = Field(False, description="Before/after /metrics scrapes were taken.")


class SweepManifest(BaseModel):
    name: str
    config: dict[str, Any] = Field(description="The SweepConfig, as given (see bankbench.sweep).")
    fingerprint: str = Field(description="Hash of the config; --resume refuses a different one.")
    levels: list[int]
    attempts: int
    server_profile: str | None = Field(description="Launched profile, or None for --base-url.")
    base_url: str
    model: str
    router: str | None = None
    tasks_dir: str
    n_tasks: int
    dataset: str | None = Field(None, description="Dataset source and revision of the tasks.")
    versions: dict[str, str | None] = Field(
        default_factory=dict,
        description="bankbench and harbor on this side; ai-dynamo (and llama-cpp-python on "
        "cpu-tiny) as installed where a launched profile runs; None where the server cannot "
        "tell (--base-url, GPU containers).",
    )
    git_sha: str | None = None
    host: dict[str, Any] = Field(default_factory=dict, description="CPU count, platform.")
    started_at: datetime
    finished_at: datetime | None = None
    level_records: list[LevelRecord] = Field(default_factory=list)
    report: str | None = Field(None, description="Path of report.md once written.")
