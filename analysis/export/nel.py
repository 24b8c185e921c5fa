"""A job or sweep as NeMo Evaluator (`nel`, nemo-evaluator 0.3.0) evaluation results, so that
`nel compare` and `nel gate` read bankbench's levels and arms as they read their own runs.

What `nel compare` reads (nemo_evaluator/engine/comparison.py, cli/regression.py; the format
page "Evaluation Result Format"): a folder holding one `eval-*.json` bundle
(`nemo_evaluator.schemas.EvalBundle`) and `results.jsonl` beside it, one line per problem and
repeat with `problem_idx` (the same problem across runs), `reward`, optional `repeat`,
`expected_answer`, `model_response`, `metadata`, `scoring_details`. It pairs lines on
`(problem_idx, repeat)`, averages repeats per problem, and tests the flips (McNemar on binary
rewards, a sign or permutation test otherwise).

Mapping: a problem is a scenario (`banking-007` → 7: the dataset row, so the same problem at
every level and in every arm), a repeat is one of Harbor's attempts of it (`repeat` − 1), the
reward is the trial's `solved` (0/1: exactly the expected tools; binary, so nel picks
McNemar) or any reward the verifier wrote (`--reward tsq`). Trials bankbench leaves out of
quality (infra, harness, interrupted, running) are left out here too: such a problem is then
unpaired, which nel reports as fewer paired problems rather than as a flip.
"""

from __future__ import annotations

import hashlib
import re
import zlib
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field

from analysis.export.layout import Arm, ExportManifest, FileSets, jsonl, run_export, set_folder
from analysis.files import Issue
from analysis.metrics.base import cluster_bootstrap_mean_ci
from analysis.metrics.quality import with_solved
from analysis.status import QUALITY_STATUSES
from analysis.tables import AnalysisInputError, Tables
from analysis.trial_inputs import read_trial_inputs
from contracts.reward import COUNT_KEYS, SCORE_KEYS

FORMAT = "nel"
REWARDS = SCORE_KEYS  # what may stand as a problem's reward (0..1 scores, not counts)
RESULTS_FILE = "results.jsonl"
DEFAULT_REWARD = "solved"
SDK = "bankbench"
_SCENARIO = re.compile(r"^(?P<domain>.+)-(?P<index>\d+)$")


class NelResult(BaseModel):
    """One line of results.jsonl (nel's per-problem record)."""

    problem_idx: int
    reward: float
    repeat: int = 0
    expected_answer: str
    model_response: str
    metadata: dict[str, Any]
    scoring_details: dict[str, Any]


class ScoreEntry(BaseModel):
    value: float
    ci_lower: float | None = None
    ci_upper: float | None = None
    stats: dict[str, Any] = Field(default_factory=dict)


class BenchmarkResult(BaseModel):
    name: str
    samples: int
    repeats: int = 1
    scores: dict[str, ScoreEntry]


class RunSnapshot(BaseModel):
    benchmark: str
    model: str = ""
    base_url: str = ""
    repeats: int = 1
    harness: str = SDK
    extra: dict[str, Any] = Field(default_factory=dict)


class EvalBundle(BaseModel):
    """`eval-<run>.json`, in the shape of `nemo_evaluator.schemas.EvalBundle`."""

    run_id: str
    config_hash: str
    sdk_version: str
    timestamp: str
    config: RunSnapshot
    benchmark: BenchmarkResult
    n_results: int


def problem_of(scenario_id: str) -> tuple[str, int]:
    """(domain, problem_idx): the dataset row of `<domain>-<index>`; another id gets a stable
    number from its text, so it still pairs across runs."""
    found = _SCENARIO.match(scenario_id)
    if found:
        return found.group("domain"), int(found.group("index"))
    return "tasks", zlib.crc32(scenario_id.encode())


def _number(value: Any) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


def _rewards(trial: dict[str, Any]) -> dict[str, float]:
    return {key: v for key in (*SCORE_KEYS, *COUNT_KEYS)
            if key in trial and (v := _number(trial[key])) is not None}


def _score(values: np.ndarray, clusters: np.ndarray) -> ScoreEntry:
    mean, low, high = cluster_bootstrap_mean_ci(values, clusters)
    return ScoreEntry(value=float(mean), ci_lower=_number(low), ci_upper=_number(high),
                      stats={"n": int(values.size), "ci": "95% scenario-cluster bootstrap"})


def bundle_for(name: str, run_id: str, results: list[NelResult], trials: pd.DataFrame,
               reward: str, snapshot: RunSnapshot, timestamp: str) -> EvalBundle:
    clusters = np.array([r.problem_idx for r in results])
    scores = {"mean_reward": _score(np.array([r.reward for r in results]), clusters)}
    for key in ("tsq", "solved"):
        if key != reward and key in trials and trials[key].notna().all():
            scores[key] = _score(trials[key].to_numpy(dtype=float), clusters)
    digest = hashlib.sha256(snapshot.model_dump_json().encode()).hexdigest()
    return EvalBundle(
        run_id=run_id, config_hash=f"sha256:{digest}", sdk_version=SDK, timestamp=timestamp,
        config=snapshot, n_results=len(results),
        benchmark=BenchmarkResult(name=name, samples=len(set(clusters.tolist())),
                                  repeats=max((r.repeat for r in results), default=0) + 1,
                                  scores=scores))


def reader(reward: str = DEFAULT_REWARD):
    """The per-arm reader `layout.run_export` calls, scoring problems by `reward`."""

    def file_sets(arm: Arm, tables: Tables, sweep: bool, issues: list[Issue],
                  skipped: Counter[str]) -> FileSets:
        trials, _ = with_solved(tables.trials) if len(tables.trials) else (tables.trials, "")
        job_paths = dict(zip(tables.jobs["job"], tables.jobs["path"], strict=True))
        manifest = next(iter(tables.sweeps.values()), None)
        groups: dict[tuple[str, str], list[tuple[NelResult, dict[str, Any]]]] = {}
        for trial in trials.to_dict("records"):
            if trial["status"] not in QUALITY_STATUSES:
                skipped[trial["status"]] += 1
                continue
            rewards = _rewards(trial)
            if reward not in rewards:
                issues.append(Issue(trial["trial"], f"no {reward!r} reward; not exported"))
                skipped[f"no {reward}"] += 1
                continue
            inputs = read_trial_inputs(Path(job_paths[trial["job"]]) / trial["trial"],
                                       trial["scenario_id"], issues, tables.task_dir(trial))
            domain, idx = problem_of(trial["scenario_id"])
            result = NelResult(
                problem_idx=idx, reward=rewards[reward], repeat=int(trial["repeat"]) - 1,
                expected_answer=", ".join(inputs.expected_tools),
                model_response=", ".join(call.tool for call in inputs.calls) or "(no tool call)",
                metadata={"scenario_id": trial["scenario_id"], "trial": trial["trial"],
                          "job": trial["job"], "level": int(trial["level"]),
                          "status": trial["status"]},
                scoring_details={**rewards, "reward_key": reward,
                                 "scored_attempt": inputs.scored_attempt,
                                 "n_calls": len(inputs.calls),
                                 "reward_imputed": bool(trial["reward_imputed"])})
            folder = set_folder(arm, int(trial["level"]), sweep)
            groups.setdefault((folder, domain), []).append((result, trial))
        domains: dict[str, set[str]] = {}
        for folder, domain in groups:
            domains.setdefault(folder, set()).add(domain)
        sets: FileSets = {}
        for (folder, domain), pairs in sorted(groups.items()):
            pairs.sort(key=lambda p: (p[0].problem_idx, p[0].repeat))
            results = [r for r, _ in pairs]
            level = results[0].metadata["level"]
            # several domains in one level: one benchmark folder each, as nel nests them
            where = folder if len(domains[folder]) == 1 else str(Path(folder) / domain)
            label = "-".join(p for p in (tables.sources[0] if tables.sources else "run",
                                         arm.folder if arm.folder != "." else "",
                                         f"c{level}" if sweep else "") if p)
            snapshot = RunSnapshot(
                benchmark=f"bankbench-{domain}",
                model=(manifest.model if manifest else "") or "",
                base_url=(manifest.base_url if manifest else "") or "",
                repeats=max(r.repeat for r in results) + 1,
                extra={"level": level, "reward": reward, "arm": arm.folder,
                       "router": manifest.router if manifest else None,
                       "server_profile": manifest.server_profile if manifest else None,
                       "git_sha": manifest.git_sha if manifest else None,
                       "source": str(arm.path)})
            started = pd.to_datetime(pd.DataFrame([t for _, t in pairs])["started_at"])
            bundle = bundle_for(
                f"bankbench-{domain}", f"eval-{label}-{domain}", results,
                pd.DataFrame([t for _, t in pairs]), reward, snapshot,
                started.min().isoformat() if started.notna().any() else "")
            sets[where] = {f"{bundle.run_id}.json": bundle.model_dump_json(indent=2) + "\n",
                           RESULTS_FILE: jsonl(results)}
        return sets

    return file_sets


def export_nel(path: Path, out: Path | None = None, reward: str = DEFAULT_REWARD,
               log: Callable[[str], None] = lambda _: None) -> ExportManifest:
    """Write results.jsonl + an eval bundle per level (and arm); raises AnalysisInputError
    (one line) when nothing can be exported or `reward` is not a score the verifier writes."""
    if reward not in REWARDS:
        raise AnalysisInputError(f"--reward {reward!r}: expected one of {', '.join(REWARDS)}")
    return run_export(path, out, FORMAT, reader(reward), owns, rows, log)


def owns(name: str) -> bool:
    return name == RESULTS_FILE or (name.startswith("eval-") and name.endswith(".json"))


def rows(contents: dict[str, str]) -> int:
    return contents[RESULTS_FILE].count("\n")
