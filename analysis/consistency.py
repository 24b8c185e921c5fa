"""Decision consistency under load, without labels: does the agent still make the same tool
calls at a concurrency level as it did at a reference run?

Each trial at a level is paired with the reference trial of the same scenario and repeat
(the lowest level of the sweep by default, or the lowest level of another sweep: a run on
another server, precision or router). Per pair:

- `tool_f1`: set F1 of the tool names called (both empty: 1; one empty: 0);
- `arg_agreement`: over the tools both called (k-th call of a tool paired with its k-th call),
  the share of argument keys (union of both sides) whose values are equal; NaN when no tool
  is shared;
- a trial lost at the level (timeout, error: any finished status but `scored`) counts 0 in
  both when its reference trial was not lost; pairs whose reference was lost are left out.

Per trial at the level, whatever the reference: `schema_valid` (share of the bank's calls
whose arguments satisfied the schema), `malformed` (share of agent replies whose text still
holds a tool-call tag the server did not parse), `truncated` (share of the agent's LLM calls
cut by `finish_reason=length`), `lost` (1 if the trial was lost).

Tool calls are read through `analysis.export.trial_inputs.read_scored_calls` (the bank's record
of the scored attempt, wherever the trial keeps it). Per level the means carry
scenario-clustered bootstrap intervals.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis import tables as tables_mod
from analysis.export.trial_inputs import read_scored_calls, reply_counts
from analysis.files import Issue
from analysis.metrics.base import Metric, cluster_bootstrap_mean_ci
from contracts.toolnames import normalise_tool_name

TOOL_F1 = Metric("tool_f1", "Tool agreement (F1)", "share", True,
                 "Set F1 of tool names called vs the reference trial of the same scenario and "
                 "repeat; a trial lost under load counts 0.")
ARG_AGREEMENT = Metric("arg_agreement", "Argument agreement", "share", True,
                       "Share of argument keys with equal values over the tools both runs "
                       "called; a trial lost under load counts 0.")
SCHEMA_VALID = Metric("schema_valid", "Schema-valid calls", "share", True,
                      "Share of the bank's recorded calls whose arguments satisfied the tool "
                      "schema (scored attempt).")
MALFORMED = Metric("malformed", "Malformed replies", "share", False,
                   "Share of agent replies whose text holds a tool-call tag the server's "
                   "parser did not turn into a call.")
TRUNCATED = Metric("truncated", "Truncated replies", "share", False,
                   "Share of the agent's LLM calls that ended with finish_reason=length.")
LOST = Metric("lost", "Trials lost", "share", False,
              "Share of finished trials that did not end scored (timeouts, server, harness or "
              "agent errors; see analysis/status.py).")

METRICS = (TOOL_F1, ARG_AGREEMENT, SCHEMA_VALID, MALFORMED, TRUNCATED, LOST)
_LOST_STATUSES = {"agent_failed", "infra_failed", "harness_failed"}
_KEYS = ["scenario_id", "repeat"]


@dataclass
class Decisions:
    """One row per finished trial: what it decided and how its replies looked."""

    frame: pd.DataFrame
    issues: list[Issue]


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
        calls = [(normalise_tool_name(c.tool), c.arguments) for c in bank_calls]
        rows.append({
            "source": t.source, "level": int(t.level), "scenario_id": t.scenario_id,
            "repeat": int(t.repeat), "trial": t.trial, "status": t.status,
            "lost": float(t.status in _LOST_STATUSES),
            "calls": calls,
            "schema_valid": (float(np.mean([c.valid for c in bank_calls]))
                             if bank_calls else np.nan),
            "malformed": (replies["unparsed_call_replies"] / replies["agent_replies"]
                          if replies["agent_replies"] else np.nan),
            "truncated": float(truncated.get((t.source, t.job, t.trial), np.nan)),
        })
    columns = ["source", "level", "scenario_id", "repeat", "trial", "status", "lost", "calls",
               "schema_valid", "malformed", "truncated"]
    return Decisions(pd.DataFrame(rows, columns=columns), issues)


def tool_f1(mine: list[tuple[str, Any]], ref: list[tuple[str, Any]]) -> float:
    a, b = {t for t, _ in mine}, {t for t, _ in ref}
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    common = len(a & b)
    return 2 * common / (len(a) + len(b))


def _as_dict(arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, str):
        import json

        try:
            arguments = json.loads(arguments)
        except ValueError:
            return {"": arguments}
    return arguments if isinstance(arguments, dict) else {"": arguments}


def arg_agreement(mine: list[tuple[str, Any]], ref: list[tuple[str, Any]]) -> float:
    """Share of argument keys with equal values over calls of shared tools, the k-th call of
    a tool paired with its k-th call on the other side; NaN when no tool is shared."""
    def by_tool(calls: list[tuple[str, Any]]) -> dict[str, list[Any]]:
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


def pair_with_reference(level_rows: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """`level_rows` with `tool_f1` and `arg_agreement` against the reference trial of the same
    scenario and repeat (rows with no usable reference get NaN)."""
    ref = reference.drop_duplicates(_KEYS).set_index(_KEYS)
    f1, args = [], []
    for row in level_rows.itertuples():
        key = (row.scenario_id, row.repeat)
        if key not in ref.index or ref.loc[key, "lost"]:
            f1.append(np.nan)
            args.append(np.nan)
        elif row.lost:
            f1.append(0.0)
            args.append(0.0)
        else:
            other = ref.loc[key, "calls"]
            f1.append(tool_f1(row.calls, other))
            args.append(arg_agreement(row.calls, other))
    return level_rows.assign(tool_f1=f1, arg_agreement=args)


def _clustered(values: pd.Series, scenarios: pd.Series) -> tuple[float, float, float]:
    """Mean with a scenario-clustered bootstrap interval: repeats of one scenario move
    together, so whole scenarios are resampled."""
    return cluster_bootstrap_mean_ci(values.to_numpy(dtype=float), scenarios.to_numpy())


def consistency_table(decisions: pd.DataFrame, reference: pd.DataFrame | None = None
                      ) -> pd.DataFrame:
    """One row per (source, level): every metric's mean with `_ci_low`/`_ci_high`, the number
    of pairs compared and the reference used. Default reference: each source's lowest level."""
    rows = []
    for source, frame in decisions.groupby("source", sort=False):
        ref = reference
        ref_label = "given"
        if ref is None:
            lowest = int(frame["level"].min())
            ref, ref_label = frame[frame["level"] == lowest], f"c{lowest}"
        for level, at in frame.groupby("level"):
            paired = pair_with_reference(at, ref)
            row: dict[str, Any] = {"source": source, "level": int(level),
                                   "reference": ref_label, "n_trials": len(at),
                                   "n_pairs": int(paired["tool_f1"].notna().sum())}
            for metric in METRICS:
                mean, low, high = _clustered(paired[metric.key], paired["scenario_id"])
                row[metric.key], row[f"{metric.key}_ci_low"] = mean, low
                row[f"{metric.key}_ci_high"] = high
            rows.append(row)
    return pd.DataFrame(rows)


def consistency(path: Path, reference: Path | None = None) -> tuple[pd.DataFrame, list[Issue]]:
    """Per-level consistency of a sweep (or job) directory against its lowest level, or
    against the lowest level of the sweep/job at `reference`."""
    decisions = read_decisions(tables_mod.load(path))
    ref_frame = None
    issues = list(decisions.issues)
    if reference is not None:
        ref = read_decisions(tables_mod.load(reference))
        issues += ref.issues
        if ref.frame.empty:
            raise tables_mod.AnalysisInputError(f"{reference}: no finished trials to compare "
                                                "against")
        ref_frame = ref.frame[ref.frame["level"] == ref.frame["level"].min()]
    table = consistency_table(decisions.frame, ref_frame)
    if reference is not None and len(table):
        table["reference"] = f"{Path(reference).name}/c{int(ref_frame['level'].min())}"
    return table, issues
