"""Decision consistency under load, without labels: does the agent still make the same tool
calls at a concurrency level as it did at a reference run, beyond the disagreement the
reference has with itself?

Every scenario runs ≥ 2 repeats per level. Per scenario (analysis/decision_noise.py holds the
statistics): the `floor` is the agreement between repeats at the level (pairs that did not run
side by side), the `baseline` the agreement between repeats at the reference (the lowest
batched level of the sweep — c2 when it ran, else its lowest level — or that of another sweep:
a run on another server, precision or router), `agreement` the mean over every (level repeat,
reference repeat) pair, `divergence` (floor + baseline)/2 − agreement (the judged statistic: 0
when the two levels' decisions have the same distribution, however noisy) and `drop`
baseline − agreement (shown beside it; it also grows when only the amount of noise grows).
Pair metrics:

- `tool_f1`: set F1 of the tool names called; two runs that called no tool agree (a decline is
  a decision), one side empty: 0; a level where no run on either side called a tool has
  nothing to compare ("no tool calls to compare": a model that never calls a tool is not
  consistent, it has made no decision);
- `arg_agreement`: over the tools both called (k-th call of a tool paired with its k-th call),
  the share of argument keys (union of both sides) whose values are equal; not compared when
  no tool is shared.

Lost trials are never disagreement: they are left out of every pair and counted on their
own. `lost` (the `lost_rate` SLO) is charged to the server: `infra_failed` trials (the LLM
server or network failed, overload replies 429/529 included) and trials that ran out of time
(an agent that waits on a slow server times out). `harness_lost` is charged to the harness
(`harness_failed`: environment, verifier, Harbor) and shown apart. Agents that fail on their own
(`agent_failed` other than time: too many steps, a refusal) made decisions and are compared
with the calls they recorded.

Per trial at the level, whatever the reference: `schema_valid` (share of the bank's calls whose
arguments satisfied the schema, as the verifier re-checked them: the bank's own flag is not
trusted; no figure for a trial the verifier did not score), `malformed` (share of agent replies
whose text still holds a tool-call tag the server did not parse), `truncated` (share of the
agent's LLM calls cut by `finish_reason=length`), with scenario-clustered bootstrap intervals.

Tool calls are read through `analysis.trial_inputs.read_scored_calls` (the bank's record of the
scored attempt, as the verifier scored it), tool names compared by `contracts.toolnames`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis import tables as tables_mod
from analysis.decision_noise import (
    Calls,
    ScenarioDivergence,
    as_reference,
    declines_agree,
    judge_divergence,
    scenario_divergences,
)
from analysis.files import Issue
from analysis.metrics.base import Metric, cluster_bootstrap_mean_ci
from analysis.trajectory import reply_counts
from analysis.trial_inputs import BankCall, read_scored_calls
from contracts.toolnames import normalise_tool_name

TOOL_F1 = Metric("tool_f1", "Tool agreement (F1)", "share",
                 "Mean set F1 of tool names over every (level repeat, reference repeat) pair "
                 "of a scenario, averaged over scenarios; two runs that called no tool agree; "
                 "lost trials are left out.", better="higher")
ARG_AGREEMENT = Metric("arg_agreement", "Argument agreement", "share",
                       "Share of argument keys with equal values over the tools both runs "
                       "called, averaged like tool_f1.", better="higher")
SCHEMA_VALID = Metric("schema_valid", "Schema-valid calls", "share",
                      "Share of the bank's recorded calls whose arguments satisfied the tool "
                      "schema as the verifier re-checked them (scored attempt).", better="higher")
MALFORMED = Metric("malformed", "Malformed replies", "share",
                   "Share of agent replies whose text holds a tool-call tag the server's "
                   "parser did not turn into a call.", better="lower")
TRUNCATED = Metric("truncated", "Truncated replies", "share",
                   "Share of the agent's LLM calls that ended with finish_reason=length.",
                   better="lower")
LOST = Metric("lost", "Trials lost (server)", "share",
              "Share of finished trials lost to the server: infra_failed (server or network "
              "errors, 429/529 overload) or out of time.", better="lower")
HARNESS_LOST = Metric("harness_lost", "Trials lost (harness)", "share",
                      "Share of finished trials lost to the harness (harness_failed: "
                      "environment, verifier, Harbor); not charged to the server.", better="lower")

AGREEMENT_METRICS = (TOOL_F1, ARG_AGREEMENT)
TRIAL_METRICS = (SCHEMA_VALID, MALFORMED, TRUNCATED)
METRICS = (*AGREEMENT_METRICS, *TRIAL_METRICS, LOST, HARNESS_LOST)
_TIMEOUTS = ("AgentTimeoutError",)


@dataclass
class Decisions:
    """One row per finished trial: what it decided and how its replies looked."""

    frame: pd.DataFrame
    issues: list[Issue]


def charged_to(status: str, exception_type: Any) -> str | None:
    """'server', 'harness' or None (the trial's decisions count)."""
    if status == "infra_failed" or (status == "agent_failed" and exception_type in _TIMEOUTS):
        return "server"
    if status == "harness_failed":
        return "harness"
    return None


def read_decisions(tables: tables_mod.Tables) -> Decisions:
    """Each finished trial's tool calls (via trial_inputs) and reply shares, keyed by
    (source, level, scenario_id, repeat)."""
    issues: list[Issue] = []
    trials = tables.trials[~tables.trials["status"].isin(["running", "interrupted"])]
    job_paths = {(r.source, r.job): Path(r.path) for r in tables.jobs.itertuples()}
    req = tables.requests
    agent = req[req["role"] == "agent"] if len(req) else req
    # (source, job, trial) -> share of the agent's calls cut by finish_reason=length
    truncated = (agent.assign(_len=agent["finish_reason"].eq("length"))
                 .groupby(["source", "job", "trial"])["_len"].mean().to_dict()
                 if len(agent) else {})
    rows: list[dict[str, Any]] = []
    for t in trials.itertuples():
        trial_dir = job_paths[(t.source, t.job)] / t.trial
        _, _, bank_calls = read_scored_calls(trial_dir, issues)
        replies = reply_counts(trial_dir, issues)
        charged = charged_to(t.status, getattr(t, "exception_type", None))
        rows.append({
            "source": t.source, "level": int(t.level), "scenario_id": t.scenario_id,
            "repeat": int(t.repeat), "trial": t.trial, "status": t.status,
            "started_at": getattr(t, "started_at", None),
            "finished_at": getattr(t, "finished_at", None),
            "lost": float(charged == "server"), "harness_lost": float(charged == "harness"),
            "calls": [(normalise_tool_name(c.tool), c.arguments) for c in bank_calls],
            "schema_valid": _share_valid(bank_calls),
            "malformed": (replies["unparsed_call_replies"] / replies["agent_replies"]
                          if replies["agent_replies"] else np.nan),
            "truncated": float(truncated.get((t.source, t.job, t.trial), np.nan)),
        })
    columns = ["source", "level", "scenario_id", "repeat", "trial", "status", "started_at",
               "finished_at", "lost", "harness_lost", "calls", "schema_valid", "malformed",
               "truncated"]
    return Decisions(pd.DataFrame(rows, columns=columns), issues)


def _share_valid(calls: list[BankCall]) -> float:
    """Share of calls whose arguments the verifier's re-check found valid; NaN when there
    are none or the verifier checked none."""
    checked = [c.schema_valid for c in calls if c.schema_valid is not None]
    return float(np.mean(checked)) if checked else np.nan


def tool_f1(mine: Calls, ref: Calls) -> float:
    """Set F1 of tool names; NaN when neither side called a tool (no decision to compare)."""
    a, b = {t for t, _ in mine}, {t for t, _ in ref}
    if not a and not b:
        return math.nan
    if not a or not b:
        return 0.0
    return 2 * len(a & b) / (len(a) + len(b))


def _as_dict(arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return {"": arguments}
    return arguments if isinstance(arguments, dict) else {"": arguments}


def arg_agreement(mine: Calls, ref: Calls) -> float:
    """Share of argument keys with equal values over calls of shared tools, the k-th call of
    a tool paired with its k-th call on the other side; NaN when no tool is shared."""
    def by_tool(calls: Calls) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {}
        for tool, args in calls:
            out.setdefault(tool, []).append(_as_dict(args))
        return out

    left, right = by_tool(mine), by_tool(ref)
    same = total = 0
    for tool in left.keys() & right.keys():
        for a, b in zip(left[tool], right[tool], strict=False):
            keys = a.keys() | b.keys()
            total += len(keys)
            same += sum(1 for k in keys if k in a and k in b and a[k] == b[k])
            if not keys:  # both called it without arguments: that agrees
                same, total = same + 1, total + 1
    return same / total if total else np.nan


PAIR_METRICS = {"tool_f1": tool_f1, "arg_agreement": arg_agreement}


def calls_by_scenario(rows: pd.DataFrame
                      ) -> tuple[dict[str, list[Calls]], dict[str, set[tuple[int, int]]]]:
    """Each scenario's repeats' calls, lost trials (server or harness) left out, and the
    index pairs (into that list) of repeats whose run intervals met (they ran side by
    side, so may share a batch)."""
    kept = rows[(rows["lost"] == 0) & (rows["harness_lost"] == 0)]
    calls: dict[str, list[Calls]] = {}
    overlaps: dict[str, set[tuple[int, int]]] = {}
    for sid, group in kept.groupby("scenario_id", sort=True):
        group = group.sort_values("repeat")
        calls[sid] = list(group["calls"])
        start = pd.to_datetime(group["started_at"], utc=True).to_numpy()
        end = pd.to_datetime(group["finished_at"], utc=True).to_numpy()
        overlaps[sid] = {(i, j) for i in range(len(group)) for j in range(i + 1, len(group))
                         if start[i] < end[j] and start[j] < end[i]}
    return calls, overlaps


def level_scenarios(level_rows: pd.DataFrame, reference: pd.DataFrame, metric: str,
                    is_reference: bool = False) -> list[ScenarioDivergence]:
    """Per scenario at a level: its own agreement, the reference's and the agreement
    between them. The reference level itself is its own reference: divergence 0."""
    pair = declines_agree(PAIR_METRICS[metric])
    level, level_overlaps = calls_by_scenario(level_rows)
    ref, ref_overlaps = calls_by_scenario(reference)
    scenarios = scenario_divergences(level, ref, pair, level_overlaps=level_overlaps,
                                     reference_overlaps=ref_overlaps)
    return as_reference(scenarios) if is_reference else scenarios


def _clustered(values: pd.Series, scenarios: pd.Series) -> tuple[float, float, float]:
    """Mean with a scenario-clustered bootstrap interval: repeats of one scenario move
    together, so whole scenarios are resampled."""
    return cluster_bootstrap_mean_ci(values.to_numpy(dtype=float), scenarios.to_numpy())


def _agreement_columns(key: str, scenarios: list[ScenarioDivergence]) -> dict[str, Any]:
    verdict = judge_divergence(scenarios, margin=math.inf, confidence=0.95)
    if verdict.outcome == "undecidable":  # no decision made: agreement is not consistency
        return {f"{key}_n": 0, f"{key}_note": verdict.note,
                **{f"{key}{name}{end}": math.nan
                   for name in ("", "_floor", "_baseline", "_divergence", "_drop")
                   for end in ("", "_ci_low", "_ci_high")}}
    row: dict[str, Any] = {f"{key}_n": verdict.n}
    for name, (mean, low, high) in (("", verdict.across), ("_floor", verdict.own),
                                    ("_baseline", verdict.reference_own),
                                    ("_divergence", verdict.divergence),
                                    ("_drop", verdict.drop)):
        row[f"{key}{name}"], row[f"{key}{name}_ci_low"] = mean, low
        row[f"{key}{name}_ci_high"] = high
    row[f"{key}_note"] = verdict.note
    return row


def reference_level(levels: Any, preferred: int = 2) -> int:
    """The reference among the levels run: `preferred` (the lowest batched level, c2) when it
    ran, else the lowest."""
    run = {int(v) for v in levels}
    return preferred if preferred in run else min(run)


def consistency_table(decisions: pd.DataFrame, reference: pd.DataFrame | None = None
                      ) -> pd.DataFrame:
    """One row per (source, level): per agreement metric its mean agreement with the
    reference, floor, baseline, divergence and drop with 95% intervals (`_ci_low`/
    `_ci_high`) and the scenarios compared (`_n`); per-trial shares with scenario-clustered
    bootstrap intervals; the lost shares. Default reference: each source's lowest batched
    level (`reference_level`)."""
    rows = []
    for source, frame in decisions.groupby("source", sort=False):
        ref, ref_label, ref_level = reference, "given", None
        if ref is None:
            ref_level = reference_level(frame["level"])
            ref, ref_label = frame[frame["level"] == ref_level], f"c{ref_level}"
        for level, at in frame.groupby("level"):
            row: dict[str, Any] = {"source": source, "level": int(level),
                                   "reference": ref_label, "n_trials": len(at),
                                   "n_scenarios": int(at["scenario_id"].nunique())}
            for metric in AGREEMENT_METRICS:
                row.update(_agreement_columns(metric.key, level_scenarios(
                    at, ref, metric.key, is_reference=level == ref_level)))
            for metric in TRIAL_METRICS:
                mean, low, high = _clustered(at[metric.key], at["scenario_id"])
                row[metric.key], row[f"{metric.key}_ci_low"] = mean, low
                row[f"{metric.key}_ci_high"] = high
            row["lost"], row["harness_lost"] = float(at["lost"].mean()), float(
                at["harness_lost"].mean())
            rows.append(row)
    return pd.DataFrame(rows)


def reference_rows(path: Path, issues: list[Issue], preferred: int = 2) -> pd.DataFrame:
    """The reference level (`reference_level`: `preferred` when it ran, else the lowest) of
    the sweep/job at `path`."""
    ref = read_decisions(tables_mod.load(path))
    issues += ref.issues
    if ref.frame.empty:
        raise tables_mod.AnalysisInputError(f"{path}: no finished trials to compare against")
    return ref.frame[ref.frame["level"] == reference_level(ref.frame["level"], preferred)]


def consistency(path: Path, reference: Path | None = None) -> tuple[pd.DataFrame, list[Issue]]:
    """Per-level consistency of a sweep (or job) directory against its lowest batched level,
    or against that of the sweep/job at `reference`."""
    decisions = read_decisions(tables_mod.load(path))
    issues = list(decisions.issues)
    ref_frame = None if reference is None else reference_rows(reference, issues)
    table = consistency_table(decisions.frame, ref_frame)
    if ref_frame is not None and len(table):
        table["reference"] = f"{Path(reference).name}/c{int(ref_frame['level'].min())}"
    return table, issues
