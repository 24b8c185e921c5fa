"""`jobs/<sweep>/`: what a sweep is configured to measure, how its level folders are named, and
`sweep.json` (what it ran, against what, and how far it got).

`SweepConfig` is the one definition of a sweep's options: the CLI (`bankbench sweep`) takes its
defaults and help from these fields, the runner executes it, `--resume` compares fingerprints,
and sweep.json stores it. One Harbor job per level lives in `<sweep>/c<level>/`
(`level_dir_name`), with `metrics_before.prom` / `metrics_after.prom` beside its trials when the
server exposes Prometheus /metrics. Written by bankbench/sweep/runner.py at start, after every
level and at the end; read by analysis to label each level's Harbor job.

A level may be run by several Harbor processes at once (`--shards N`): then `c<level>/` holds
no job of its own but one Harbor job per shard, `c<level>/s<k>/` (`shard_dir_name`), each with
`shard.json` (`ShardRecord`: its concurrency, its tasks, the host and process that ran it), and
the level's `metrics_before.prom` / `metrics_after.prom` stay in `c<level>/`. `level_jobs`
gives a level's Harbor jobs either way; every reader walks a level through it.

A sweep over several routers (`bankbench sweep --routers a,b`) is a folder holding
`routers.json` (`RouterSweepManifest`) and one ordinary sweep per router in `r-<router>/`
(`router_dir_name`), each with its own `sweep.json` whose `router` (and every level record's
`router`) says which router served it; readers of one sweep read each `r-<router>/` unchanged.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from contracts.conversation import DEFAULT_MAX_TURNS
from contracts.expected import DEFAULT_LABEL_METHOD
from contracts.task import DEFAULT_MODE, InstructionMode

SWEEP_FILE = "sweep.json"
ROUTERS_FILE = "routers.json"
METRICS_BEFORE = "metrics_before.prom"
METRICS_AFTER = "metrics_after.prom"
SHARD_FILE = "shard.json"
# With `steady` M a level runs at least M x its concurrency trials: a sweep asks for it
# (--steady, off by default: a sweep runs what it is told), a capacity search runs every level
# with STEADY_MULTIPLE unless told otherwise. A level's measured window starts once
# DEFAULT_WARMUP_SHARE of its first `level` trials have finished.
DEFAULT_STEADY = 0
STEADY_MULTIPLE = 3
DEFAULT_WARMUP_SHARE = 0.5

# Short names of Harbor environments; anything else is passed on as `module:Class`.
ENVIRONMENTS = {
    "local": "environments.local:LocalEnvironment",
    "docker": "docker",
}
_LEVEL_DIR = re.compile(r"^c(\d+)(?:\.p(\d+))?$")
_SHARD_DIR = re.compile(r"^s(\d+)$")


def level_dir_name(level: int) -> str:
    """The folder of one level's Harbor job: `c<level>`."""
    return f"c{level}"


def level_dir(sweep_dir: Path, level: int) -> Path:
    return sweep_dir / level_dir_name(level)


def pass_dir_name(level: int, number: int) -> str:
    """The folder of a level's extra pass (more repeats run after the level): `c<level>.p<n>`,
    n = 1, 2 …; pass 0 is the level folder itself. Readers fold a pass into its level
    (`level_of_dir`)."""
    return level_dir_name(level) if number == 0 else f"{level_dir_name(level)}.p{number}"


def steady_repeats(repeats: int, concurrency: int, n_tasks: int, steady: int) -> int:
    """harbor -k for a level (or one shard of it) of `concurrency` slots over `n_tasks` tasks:
    `repeats`, raised until the level runs at least `steady` x `concurrency` trials so that its
    slots stay full over a measured window (0: never raised)."""
    if steady <= 0 or n_tasks <= 0:
        return repeats
    return max(repeats, -(-steady * concurrency // n_tasks))


def shard_dir_name(shard: int) -> str:
    """The folder of one shard's Harbor job inside its level folder: `s<shard>`."""
    return f"s{shard}"


def level_jobs(level_path: Path) -> list[Path]:
    """The Harbor jobs of one level folder: the folder itself (one process ran the level), or
    its `s<k>/` shard jobs in shard order; [] when the folder does not exist."""
    if not level_path.is_dir():
        return []
    if (level_path / "config.json").exists():
        return [level_path]
    shards = [(int(m.group(1)), d) for d in level_path.iterdir()
              if d.is_dir() and (m := _SHARD_DIR.match(d.name))]
    return [d for _, d in sorted(shards)] or [level_path]


def router_dir_name(router: str) -> str:
    """The folder of one router's sweep inside a multi-router sweep: `r-<router>`."""
    return f"r-{router}"


def level_of_dir(name: str) -> int | None:
    """The level a `c<level>` (or extra pass `c<level>.p<n>`) folder name holds, or None for
    any other name."""
    found = _LEVEL_DIR.match(name)
    return int(found.group(1)) if found else None


class SweepConfig(BaseModel):
    """What defines a sweep: two runs with the same config measure the same thing."""

    levels: list[int] = Field(
        [1, 2, 4, 8], description="Concurrency levels, one Harbor job each (harbor -n LEVEL)."
    )
    attempts: int = Field(
        1, ge=1,
        description="Harbor attempts per task at each level (-k; repeats for pass@k spread).",
    )
    profile: str | None = Field(
        None, description="Serve profile launched for the sweep (cpu-tiny, cpu-mocker, gpu-…)."
    )
    router: str | None = Field(
        None, description="Dynamo router mode for a launched profile (unset: the profile's)."
    )
    workers: int | None = Field(
        None, ge=1, description="Engine workers for a launched profile (unset: the profile's)."
    )
    server_options: dict[str, str] = Field(
        default_factory=dict, description="`--set key=value` overrides for the profile."
    )
    base_url: str | None = Field(
        None, description="OpenAI-compatible URL of a running server (…/v1)."
    )
    model: str | None = Field(
        None, description="Served model name (required with --base-url; else the profile's)."
    )
    source: str = Field(
        "auto",
        description="Dataset when tasks are built: auto (hub, else the bundled sample) | hf | "
        "sample | DIR.",
    )
    tasks: str | None = Field(
        None, description="Existing task directory (skips building)."
    )
    limit: int | None = Field(None, ge=1, description="Use only the first N scenarios.")
    mode: InstructionMode = Field(
        DEFAULT_MODE, description="Instruction mode of built tasks: goals (first message and every "
        "goal at once) | first-message | conversation (a simulated customer in the task "
        "environment reveals the goals turn by turn; docs/conversation.md)."
    )
    max_turns: int = Field(
        DEFAULT_MAX_TURNS, ge=1, le=100,
        description="Conversation mode: most customer replies the agent gets per attempt.",
    )
    labels: str = Field(
        DEFAULT_LABEL_METHOD, description="Expected-tool labels of built tasks, by labelling "
        "method (any but model; tasks.banking.labels.methods)."
    )
    env: str = Field(
        "local", description="Harbor environment: local (no Docker) | docker | module:Class."
    )
    shards: int = Field(
        1, ge=1, description="Harbor processes per level: each level's trials are split over N "
        "processes (fewer at a level below N) whose concurrencies sum to the level, started "
        "together.",
    )
    ray: str | None = Field(
        None, description="Run each level's shards as Ray tasks on the Ray cluster at this "
        "address (auto: the one this machine belongs to); needs bankbench[ray] and a sweep "
        "directory on storage every node shares.",
    )
    agent_kwargs: dict[str, str] = Field(
        default_factory=dict, description="Agent options passed as harbor --ak key=value."
    )
    steady: int = Field(
        DEFAULT_STEADY, ge=0, description="Run each level at steady state: at least STEADY x "
        "LEVEL trials, scenarios x repeats cycled (harbor -k raised at that level, never "
        "below --attempts), so its slots stay full over a measured window (3 is what a "
        "capacity search runs); 0: -k --attempts at every level.",
    )
    warmup_share: float = Field(
        DEFAULT_WARMUP_SHARE, ge=0.0, le=1.0, description="Warm-up left out of a level's "
        "measured window: each run of the level is measured from the time this share of its "
        "first LEVEL trials have finished (0: from its first request).",
    )
    keep_drain: bool = Field(
        False, description="Keep a level's drain in its measured window (default: left out, "
        "from the first trial end after each run's last trial start: the queue is empty and "
        "a freed slot stays idle).",
    )

    @field_validator("levels")
    @classmethod
    def _levels(cls, v: list[int]) -> list[int]:
        if not v or any(n < 1 for n in v):
            raise ValueError("levels must be positive integers, e.g. 1,2,4,8")
        if len(set(v)) != len(v):
            raise ValueError(f"levels repeat a value: {v}")
        return v

    @field_validator("labels")
    @classmethod
    def _labels(cls, v: str) -> str:
        if v == "model":
            raise ValueError("a sweep does not ask a model for labels: build and review them "
                             "first (bankbench tasks build --labels model), then give "
                             "--labels file:PATH")
        return v

    @model_validator(mode="after")
    def _server(self) -> SweepConfig:
        if bool(self.profile) == bool(self.base_url):
            raise ValueError("give exactly one of --profile (launch a server) or --base-url")
        if self.base_url and not self.model:
            raise ValueError("--base-url needs --model (the served model name)")
        return self

    @property
    def sharded(self) -> bool:
        """Levels are laid out as shard jobs (`c<level>/s<k>/`)."""
        return self.shards > 1 or self.ray is not None

    @property
    def environment(self) -> str:
        return ENVIRONMENTS.get(self.env, self.env)

    def _measured(self) -> dict[str, Any]:
        """The fields that change what is measured: every one, but `max_turns` only in
        conversation mode (so a goals sweep's fingerprint is what it was before the field)."""
        fields = self.model_dump(mode="json")
        if self.mode != "conversation":
            fields.pop("max_turns")
        if self.shards == 1:
            fields.pop("shards")  # an unsharded sweep's fingerprint is what it was before
        if self.steady == 0:
            fields.pop("steady")  # a sweep started before the field keeps its fingerprint
        fields.pop("ray")  # where the shards run, not what they measure
        # How the measured window is cut is a reading of the run, not what it ran.
        fields.pop("warmup_share")
        fields.pop("keep_drain")
        return fields

    def fingerprint(self) -> str:
        """Stable hash of everything that changes what is measured."""
        blob = json.dumps(self._measured(), sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def differences(self, other: SweepConfig) -> list[str]:
        mine, theirs = self._measured(), other._measured()
        return [f"{k}: {theirs[k]!r} -> {mine[k]!r}" for k in mine if mine[k] != theirs.get(k)]


class LevelRun(BaseModel):
    """One run of a level's Harbor job(s): the first, each resume, each extra pass. The level's
    measured window is cut per run, so the pause between two runs is never measured."""

    started_at: datetime = Field(description="When the run's Harbor processes started.")
    finished_at: datetime | None = Field(None, description="When they ended (None: killed).")
    cut_at: datetime | None = Field(
        None, description="The run was stopped before its queue emptied: the earliest start "
        "of a trial it left unfinished (moved aside or rerun by the next run). Its measured "
        "window ends there: later, some slots held trials whose requests are not kept.")


class LevelPass(BaseModel):
    """More repeats of a level run after it, as their own Harbor job(s) in `c<level>.p<n>/`."""

    job_dir: str = Field(description="Its folder, relative to the sweep dir (c<level>.p<n>).")
    repeats: int = Field(ge=1, description="Repeats per scenario asked for.")
    attempts: int | None = Field(
        None, description="Its harbor -k: the repeats, raised to the steady-state minimum "
        "like the level's (None until it starts).")
    state: str = Field("pending", description="pending | running | complete | failed | "
                       "interrupted")


class LevelRecord(BaseModel):
    level: int = Field(description="Configured concurrency (harbor -n).")
    job_dir: str = Field(description="Harbor job folder, relative to the sweep dir (c<level>).")
    state: str = Field("pending", description="pending | running | complete | failed | "
                       "interrupted (the sweep was stopped while the level ran)")
    router: str | None = Field(
        None, description="Router the level ran behind (the launched profile's; None: unknown, "
        "e.g. --base-url).")
    started_at: datetime | None = None
    finished_at: datetime | None = None
    resumed: bool = Field(
        False, description="Continued after an interruption: the /metrics diff covers only the "
        "part run after resuming (metrics_before.prom is re-scraped then).",
    )
    metrics: bool = Field(False, description="Before/after /metrics scrapes were taken.")
    shards: int = Field(1, ge=1, description="Harbor processes that ran the level.")
    repeats: int | None = Field(
        None, description="harbor -k of the level's (first shard's) job: --attempts, raised "
        "for steady state (SweepConfig.steady); None in sweeps older than the field.")
    runs: list[LevelRun] = Field(
        default_factory=list, description="Each run of the level, in order (empty in sweeps "
        "older than the field: analysis finds the runs from the trials).")
    passes: list[LevelPass] = Field(
        default_factory=list, description="Extra passes of more repeats, in order.")


class ShardRecord(BaseModel):
    """`c<level>/s<k>/shard.json`: one shard of a level, written by the sweep before its Harbor
    job starts and again when it ends. Its trials are the Harbor job's trial folders beside it,
    so a trial's shard and host are its job folder's."""

    level: int
    shard: int = Field(ge=0)
    n_shards: int = Field(ge=1)
    concurrency: int = Field(ge=1, description="This shard's harbor -n; shards sum to level.")
    tasks: list[str] = Field(description="Task names this shard runs (harbor -i each).")
    host: str = Field(description="Host name of the machine that ran the shard's Harbor.")
    node: str | None = Field(None, description="Ray node id, when the shard ran as a Ray task.")
    pid: int | None = Field(None, description="Harbor's process id on that host.")
    state: str = Field("running", description="running | complete | partial | failed")
    error: str | None = Field(None, description="Why the shard's Harbor failed (one line).")
    started_at: datetime | None = None
    finished_at: datetime | None = None


class RouterSetup(BaseModel):
    """How the frontend of a stack bankbench launched routes and queues requests, read off its
    command line: the router mode, session affinity, the queue flags and the
    `--router-policy-config` file (its SHA-256 and its text, kept so the run says exactly what
    routed it). Flags left out are None: Dynamo's own defaults then apply (1.6.1: queue policy
    fcfs, and no router queueing unless a threshold or a policy config sets one)."""

    mode: str | None = None
    session_affinity_ttl_secs: int | None = None
    queue_policy: str | None = Field(
        None, description="The queue policy in force: the policy config's classes' (which "
        "replace the flag when the config has a profile), else --router-queue-policy.")
    queue_policy_from: Literal["flag", "policy config"] | None = None
    queue_threshold: float | None = Field(None, description="--router-queue-threshold.")
    policy_config_path: str | None = None
    policy_config_sha256: str | None = None
    policy_config: str | None = Field(None, description="The policy config file's text.")
    note: str | None = Field(None, description="Why a named policy config could not be read.")

    def summary(self) -> str:
        """One line for a report: `kv; affinity 600 s; queue wspt; policy sha256:1a2b3c4d5e6f`."""
        parts = [self.mode or "router mode unknown"]
        if self.session_affinity_ttl_secs is not None:
            parts.append(f"affinity {self.session_affinity_ttl_secs} s")
        if self.queue_policy or self.queue_threshold is not None:
            parts.append(f"queue {self.queue_policy or 'fcfs (default)'}"
                         + (f" at {self.queue_threshold:g}" if self.queue_threshold is not None
                            else "")
                         + (" (policy config)" if self.queue_policy_from == "policy config"
                            else ""))
        if self.policy_config_path:
            parts.append(f"policy sha256:{self.policy_config_sha256[:12]}"
                         if self.policy_config_sha256 else f"policy {self.note or 'unread'}")
        return "; ".join(parts)


class SweepManifest(BaseModel):
    name: str
    config: SweepConfig = Field(description="The sweep's configuration, as given.")
    fingerprint: str = Field(description="Hash of the config; --resume refuses a different one.")
    levels: list[int]
    attempts: int
    server_profile: str | None = Field(description="Launched profile, or None for --base-url.")
    base_url: str
    earlier_base_urls: list[str] = Field(
        default_factory=list,
        description="Addresses the sweep ran against before a resume moved it to `base_url` "
        "(`--resume DIR --base-url NEW`), oldest first.",
    )
    model: str
    router: str | None = None
    router_setup: RouterSetup | None = Field(
        None, description="The launched stack's routing and queueing (None for --base-url: "
        "a server bankbench did not start tells nothing of its own).")
    tasks_dir: str
    n_tasks: int
    dataset: str | None = Field(None, description="Dataset source and revision of the tasks.")
    dataset_fallback: str | None = Field(
        None, description="Why the bundled sample was used although --source auto asked for the "
        "hub (the hub's error, one line); None when the dataset is the one asked for.",
    )
    versions: dict[str, str | None] = Field(
        default_factory=dict,
        description="bankbench and harbor on this side; ai-dynamo (and xllamacpp on "
        "cpu-tiny) as installed where a launched profile runs; None where the server cannot "
        "tell (--base-url, GPU containers).",
    )
    git_sha: str | None = None
    host: dict[str, Any] = Field(default_factory=dict, description="CPU count, platform.")
    started_at: datetime
    finished_at: datetime | None = None
    level_records: list[LevelRecord] = Field(default_factory=list)
    report: str | None = Field(None, description="Path of report.md once written.")


class RouterRun(BaseModel):
    router: str
    sweep_dir: str = Field(description="The router's sweep folder, relative (r-<router>).")
    state: str = Field("pending", description="pending | running | complete | failed")


class RouterSweepManifest(BaseModel):
    """`routers.json`: the same sweep run once per router, one after the other, each against a
    freshly started stack (same tasks, levels, seeds and options; only the router differs)."""

    name: str
    routers: list[str]
    config: SweepConfig = Field(description="The shared configuration (its router unset).")
    fingerprint: str
    runs: list[RouterRun]
    started_at: datetime
    finished_at: datetime | None = None
