"""`judge_path`: every scored or agent-failed trial of a job or sweep, judged once per
(prompt version, judge model), its verdict written to `<trial>/judge/<version>-<model>.json`.

Resumable: a trial that already has a usable verdict file for this prompt version and model
is skipped; a verdict with no usable sample (every request failed, or no answer could be
parsed) is asked again on the next run, and `force` asks every trial again. One trial's
failure never stops the others. Nothing here writes outside `<trial>/judge/`.
"""

from __future__ import annotations

import os
import statistics
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field

from analysis.files import Issue
from analysis.judge.client import JudgeClient
from analysis.judge.prompt import DEFAULT_VERSION, load_prompt, messages
from analysis.status import QUALITY_STATUSES
from analysis.tables import AnalysisInputError, load
from analysis.trial_inputs import read_trial_inputs
from contracts.atomic import write_atomic
from contracts.judge import JUDGE_DIR, METRICS, JudgeRecord, JudgeSample, MetricSummary, record_name


class JudgeOptions(BaseModel):
    base_url: str = Field(description="The judge's OpenAI-compatible base URL (…/v1).")
    model: str = Field(description="The judge model's served name.")
    api_key_env: str | None = Field(None, description="Environment variable holding the key.")
    samples: int = Field(1, ge=1, le=50, description="Requests per trial.")
    temperature: float | None = Field(
        None, ge=0, le=2, description="Default 0 for one sample, 0.7 for several.")
    prompt_version: str = DEFAULT_VERSION
    timeout_s: float = Field(120.0, gt=0)
    nvext_annotations: list[str] = Field(
        default_factory=list, description="Dynamo nvext annotations formatted with "
        "{scenario_id} and {sample} (0-based), e.g. output_replay_id:{scenario_id}:{sample}.")
    force: bool = Field(False, description="Judge again trials that already have a verdict.")

    @property
    def effective_temperature(self) -> float:
        if self.temperature is not None:
            return self.temperature
        return 0.0 if self.samples == 1 else 0.7


# Verdict states with no usable sample: asked again on the next run.
FAILED_VERDICTS = ("error", "unparseable")


class JudgeRunSummary(BaseModel):
    judged: int = 0
    skipped_done: int = 0
    skipped_status: dict[str, int] = Field(default_factory=dict)
    outcomes: dict[str, int] = Field(default_factory=dict)
    files: list[str] = Field(default_factory=list)

    @property
    def failed(self) -> int:
        """Verdicts of this run with no usable sample."""
        return sum(self.outcomes.get(s, 0) for s in FAILED_VERDICTS)

    @property
    def verdicts(self) -> int:
        """Verdicts this judge now has: asked in this run, or usable ones kept from before."""
        return self.judged + self.skipped_done

    @property
    def mostly_failed(self) -> bool:
        """Most of the judge's verdicts are unusable: its figures would stand on few."""
        return self.judged > 0 and 2 * self.failed > self.verdicts


def _metric(samples: list[JudgeSample], name: str) -> MetricSummary:
    scores = [getattr(s, name).score for s in samples if s.status == "ok"]
    if not scores:
        return MetricSummary()
    std = statistics.pstdev(scores) if len(scores) > 1 else 0.0
    return MetricSummary(mean=statistics.fmean(scores), std=std, n=len(scores))


def _status(samples: list[JudgeSample]) -> str:
    ok = sum(s.status == "ok" for s in samples)
    if ok == len(samples):
        return "ok"
    if ok:
        return "partial"
    return "error" if all(s.status == "error" for s in samples) else "unparseable"


def _already_judged(path: Path) -> bool:
    try:
        record = JudgeRecord.model_validate_json(path.read_bytes())
    except (OSError, ValueError):
        return False
    return record.status not in FAILED_VERDICTS


def judge_path(path: Path, options: JudgeOptions,
               log: Callable[[str], None] = lambda _: None) -> JudgeRunSummary:
    """Judge every eligible trial under `path`; raises AnalysisInputError (one line) when the
    folder holds no job, ValueError for an unknown prompt version."""
    prompt = load_prompt(options.prompt_version)
    key = os.environ.get(options.api_key_env) if options.api_key_env else None
    if options.api_key_env and not key:
        raise ValueError(f"--api-key-env {options.api_key_env}: the variable is not set")
    tables = load(Path(path))
    if tables.trials.empty:
        raise AnalysisInputError(f"{path}: no trials to judge")
    job_paths = dict(zip(tables.jobs["job"], tables.jobs["path"], strict=True))
    name = record_name(prompt.version, options.model)
    summary = JudgeRunSummary()
    skipped: Counter[str] = Counter()
    outcomes: Counter[str] = Counter()
    client = JudgeClient(options.base_url, options.model, key, timeout_s=options.timeout_s)
    trials = tables.trials.to_dict("records")
    try:
        for number, trial in enumerate(trials, start=1):
            if trial["status"] not in QUALITY_STATUSES:
                skipped[trial["status"]] += 1
                continue
            trial_dir = Path(job_paths[trial["job"]]) / trial["trial"]
            out = trial_dir / JUDGE_DIR / name
            if not options.force and _already_judged(out):
                summary.skipped_done += 1
                continue
            issues: list[Issue] = []
            inputs = read_trial_inputs(trial_dir, trial["scenario_id"], issues,
                                       tables.task_dir(trial))
            chat = messages(prompt, inputs)
            samples = []
            for sample in range(options.samples):
                nvext = None
                if options.nvext_annotations:
                    nvext = {"annotations": [a.format(scenario_id=inputs.scenario_id,
                                                      sample=sample)
                                             for a in options.nvext_annotations]}
                samples.append(client.sample(chat, options.effective_temperature, nvext))
            record = JudgeRecord(
                trial=trial["trial"], scenario_id=inputs.scenario_id,
                prompt_version=prompt.version, prompt_sha256=prompt.sha256,
                model=options.model, base_url=options.base_url,
                temperature=options.effective_temperature, samples_requested=options.samples,
                samples=samples, status=_status(samples), judged_at=datetime.now(UTC),
                **{m: _metric(samples, m) for m in METRICS})
            out.parent.mkdir(exist_ok=True)
            write_atomic(out, record.model_dump_json(indent=2) + "\n")
            summary.judged += 1
            outcomes[record.status] += 1
            summary.files.append(str(out))
            tsq, ac = record.tool_selection_quality.mean, record.action_completion.mean
            log(f"[{number}/{len(trials)}] {trial['trial']}: {record.status}"
                + (f" (TSQ {tsq:.2f}, AC {ac:.2f})" if tsq is not None and ac is not None
                   else ""))
    finally:
        client.close()
    summary.skipped_status = dict(skipped)
    summary.outcomes = dict(outcomes)
    return summary
