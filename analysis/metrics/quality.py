"""Tool-selection quality of one group of trials (a level of a job or sweep), and the
gold-perfect agent's figures on the same labels (`gold_perfect_figures`).

Two views of which trials count:
- *infra excluded* (the `…_mean` figures): trials in `in_quality` (scored and agent_failed);
  infra, harness and interrupted trials are left out and shown in the status table.
- *infra as 0* (`…_infra0_mean`): the same plus every `infra_failed` trial scored 0, so a
  server that fails under load cannot raise quality by dropping the hard cases.

Repeated trials of a scenario (`harbor run -k`) are correlated, so every interval here
resamples scenarios with all their trials (`cluster_bootstrap_mean_ci`), never single trials.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.metrics.base import (
    Metric,
    bootstrap_mean_ci,
    cluster_bootstrap_mean_ci,
    pass_at_k,
    pass_hat_k,
)

_CI = ("Mean over counted trials (infra failures excluded) with a seeded 95% "
       "scenario-cluster bootstrap CI (`{key}_ci_low`, `{key}_ci_high`; blank with < 2 "
       "scenarios).")
_REWARDS = {
    "tsq": ("TSQ", "Tool Selection Quality: set F1 of normalised tool names against the "
            "task's labels, accepted attempt."),
    "precision": ("Precision", "Share of called tool names that were expected."),
    "recall": ("Recall", "Share of expected tool names that were called."),
    "param_validity": ("Param validity",
                       "Share of recorded calls whose arguments satisfy the tool schema."),
    "multiset_f1": ("Multiset F1", "F1 counting repeated calls of a tool."),
    "goal_coverage": ("Goal coverage", "Share of the customer's goals listing tools where one "
                      "was called (= goals served when any goal lists tools; recall when none "
                      "does)."),
    "solved": ("Solved", "Share of trials that solved the scenario: with every goal labelled, "
               "every goal served or declined and no call outside the goals' alternatives; "
               "otherwise every expected tool called and no unexpected one (reward.json "
               "`solved` when present, else precision = recall = 1 of the scored attempt; "
               "`solved_from` says which)."),
    "goals_served": ("Goals served", "Share of a trial's servable goals (alternatives listed) "
                     "where one alternative was called; over trials with such goals."),
    "goals_declined": ("Goals declined", "Share of a trial's no-tool goals declined (no call "
                       "outside every servable goal's alternatives); over trials with such "
                       "goals only."),
    "goal_score": ("Goal score", "Goals handled right (served or declined) over the trial's "
                   "labelled goals plus the distinct tools it called that serve no goal (each "
                   "a goal mishandled); over trials with labelled goals."),
}
# A goal share is vacuous in a trial without the goals it counts (reward.json then holds 1.0
# or goal_coverage): those trials are left out of its mean, by these counts.
_GOAL_COUNTS = {"goals_served": ("n_goals_servable",), "goals_declined": ("n_goals_no_tool",),
                "goal_score": ("n_goals_servable", "n_goals_no_tool")}
# How the report's quality tables name a figure (the gold-perfect one: "<name> gold-perfect").
_NAMES = {"tsq": "TSQ", "solved": "solved", "precision": "precision", "recall": "recall",
          "param_validity": "param validity", "goals_served": "goals served",
          "goals_declined": "goals declined", "goal_score": "goal score"}
_COLUMNS = {**_NAMES, "tsq": "TSQ (infra excl.)", "solved": "solved (infra excl.)"}
REWARD_METRICS = tuple(
    Metric(key, header, "score 0–1" if key != "solved" else "share",
           f"{text} {_CI.format(key=key)}", column=_COLUMNS.get(key, ""), better="higher",
           short_header=_NAMES.get(key, ""))
    for key, (header, text) in _REWARDS.items()
)
TSQ_INFRA0 = Metric(
    "tsq_infra0", "TSQ (infra failures as 0)", "score 0–1",
    "TSQ mean over counted trials plus infra_failed trials scored 0; CI as for TSQ. Compare "
    "with `tsq_mean` (infra failures excluded): a gap means the server's failures hid "
    "scenarios from the quality figure.", column="TSQ (infra as 0)", better="higher",
    short_header="TSQ infra=0")
SOLVED_INFRA0 = Metric(
    "solved_infra0", "Solved (infra failures as 0)", "share",
    "Solved share over counted trials plus infra_failed trials counted unsolved; CI as for "
    "TSQ.", column="solved (infra as 0)", better="higher")
PASS_AT_1 = Metric("pass_at_1", "pass@1", "share",
                   "Mean over scenarios of the share of its counted trials that solved it.",
                   column="pass@1", better="higher")
PASS_AT_K = Metric("pass_at_k", "pass@k", "share",
                   "Mean over scenarios of P(at least one of k trials solves it), unbiased "
                   "estimator 1 − C(n−c,k)/C(n,k) from its n counted trials (c solved); "
                   "k = fewest counted trials of any scenario (needs ≥ 2). CI: bootstrap "
                   "over scenarios.", column="pass@k", better="higher")
PASS_HAT_K = Metric("pass_hat_k", "pass^k", "share",
                    "Mean over scenarios of P(all k trials solve it) = C(c,k)/C(n,k), as in "
                    "tau-bench: consistency under repeats. CI: bootstrap over scenarios.",
                    column="pass^k", better="higher")
K = Metric("k", "k", "trials",
           "Fewest counted trials of any scenario (with a solved flag): the k of pass@k and "
           "pass^k, which need k ≥ 2.", column="k", better=None)
TSQ_SPREAD = Metric("tsq_scenario_std", "TSQ spread", "score 0–1",
                    "Mean over scenarios with ≥ 2 trials of the standard deviation of their TSQ.",
                    column="TSQ spread", better="lower")

N_SCENARIOS = Metric("n_scenarios", "Scenarios", "scenarios",
                     "Distinct scenarios among the counted trials: the unit every quality "
                     "interval resamples.", column="scenarios", better=None)
# Filled by analysis/provenance.py from the tasks' expected.json; defined here so the report's
# table of figures has them.
GOLD_PERFECT_KEYS = ("tsq", "solved", "goal_score", "goals_declined")
GOLD_PERFECT = tuple(
    Metric(f"gold_perfect_{key}", f"{_REWARDS[key][0]} gold-perfect", "score 0–1"
           if key != "solved" else "share",
           f"What an agent making exactly the gold calls scores as `{key}` against the same "
           "labels (the verifier's own scoring, per scenario, averaged over the level's "
           "scenarios as the trials' figure is; 95% scenario bootstrap CI). Measured only "
           "where the dataset has gold labels (the bundled sample, a directory with "
           "gold_labels.json); blank (\"not measured\") elsewhere. It is not an upper bound: an "
           "agent that repeats the labeller's mistakes scores higher.",
           column=f"{_NAMES[key]} gold-perfect", better=None)
    for key in GOLD_PERFECT_KEYS)

METRICS = (*REWARD_METRICS, TSQ_INFRA0, SOLVED_INFRA0, PASS_AT_1, PASS_AT_K, PASS_HAT_K, K,
           TSQ_SPREAD, N_SCENARIOS, *GOLD_PERFECT)

SOLVED_FROM_REWARD = "reward.json solved"
SOLVED_DERIVED = "derived: precision = recall = 1"
_ONE = 1 - 1e-9

# Summary column → (trial value column, view) for figures compared with a paired interval.
PAIRED_KEYS: dict[str, tuple[str, str]] = {
    "tsq_mean": ("tsq", "counted"), "tsq_infra0_mean": ("tsq", "infra0"),
    "solved_mean": ("solved", "counted"), "solved_infra0_mean": ("solved", "infra0"),
    "precision_mean": ("precision", "counted"), "recall_mean": ("recall", "counted"),
    "param_validity_mean": ("param_validity", "counted"),
}


def with_solved(trials: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """`trials` with a 0/1 `solved` column, and where it came from.

    The verifier's own `solved` wins where a trial has it; elsewhere a trial is solved when
    precision and recall of its scored attempt are both 1."""
    derived = ((trials["precision"] >= _ONE) & (trials["recall"] >= _ONE)).astype(float)
    derived = derived.where(trials["precision"].notna() & trials["recall"].notna())
    given = trials["solved"] if "solved" in trials.columns else pd.Series(np.nan, trials.index)
    solved = given.astype(float).where(given.notna(), derived)
    counted = trials["in_quality"].astype(bool)
    from_reward = bool(given[counted].notna().any())
    from_derived = bool((given[counted].isna() & derived[counted].notna()).any())
    source = ("mixed: " + SOLVED_FROM_REWARD + " / " + SOLVED_DERIVED
              if from_reward and from_derived
              else SOLVED_FROM_REWARD if from_reward else SOLVED_DERIVED)
    return trials.assign(solved=solved), source


def view(trials: pd.DataFrame, which: str) -> pd.DataFrame:
    """The trials a view counts: `counted` (infra excluded) or `infra0` (infra as 0)."""
    counted = trials["in_quality"].astype(bool)
    if which == "counted":
        return trials[counted]
    infra = trials["status"] == "infra_failed"
    zeroed = trials[infra].assign(**{k: 0.0 for k in ("tsq", "solved") if k in trials})
    return pd.concat([trials[counted], zeroed])


def quality_metrics(trials: pd.DataFrame) -> dict[str, float | str]:
    trials, solved_from = with_solved(trials)
    counted = view(trials, "counted")
    out: dict[str, float | str] = {"solved_from": solved_from,
                                   "n_scenarios": float(counted["scenario_id"].nunique())}
    for metric in REWARD_METRICS:
        _put_ci(out, metric.key, _with_goals(counted, metric.key), metric.key)
    infra0 = view(trials, "infra0")
    _put_ci(out, TSQ_INFRA0.key, infra0, "tsq")
    _put_ci(out, SOLVED_INFRA0.key, infra0, "solved")
    out.update(repeat_spread(counted))
    return out


def _with_goals(rows: pd.DataFrame, key: str) -> pd.DataFrame:
    """The rows a goal share is averaged over: trials with the goals it counts, and trials
    scored 0 without a reward file (reward_imputed). Other keys: all rows."""
    counts = _GOAL_COUNTS.get(key)
    if counts is None or key not in rows.columns:
        return rows
    present = [c for c in counts if c in rows.columns]
    has_goals = rows[present].fillna(0).sum(axis=1) > 0 if present else False
    imputed = rows["reward_imputed"].astype(bool) if "reward_imputed" in rows else False
    return rows[has_goals | imputed]


def _put_ci(out: dict[str, float | str], key: str, rows: pd.DataFrame, column: str) -> None:
    mean, low, high = cluster_bootstrap_mean_ci(rows[column].to_numpy(dtype=float),
                                                rows["scenario_id"].to_numpy())
    out[f"{key}_mean"], out[f"{key}_ci_low"], out[f"{key}_ci_high"] = mean, low, high


def repeat_spread(counted: pd.DataFrame) -> dict[str, float]:
    """pass@1, pass@k, pass^k (on `solved`) and TSQ spread across repeats of each scenario."""
    keys = (PASS_AT_1.key, PASS_AT_K.key, PASS_HAT_K.key)
    empty = {k: np.nan for k in keys} | {f"{k}_ci_{e}": np.nan for k in keys[1:]
                                         for e in ("low", "high")}
    if "solved" not in counted.columns:
        counted = with_solved(counted)[0]
    scored = counted.dropna(subset=["solved"])
    if scored.empty:
        return empty | {K.key: np.nan, TSQ_SPREAD.key: np.nan}
    by = scored.groupby("scenario_id")
    per = pd.DataFrame({"n": by.size(), "c": by["solved"].sum(), "std": by["tsq"].std(ddof=0)})
    k = int(per["n"].min())
    out = empty | {PASS_AT_1.key: float((per["c"] / per["n"]).mean()), K.key: float(k)}
    if k >= 2:
        pairs = list(zip(per["n"].astype(int), per["c"].round().astype(int), strict=True))
        for metric, estimator in ((PASS_AT_K, pass_at_k), (PASS_HAT_K, pass_hat_k)):
            # Scenarios are independent: a plain bootstrap of the per-scenario estimates.
            mean, low, high = bootstrap_mean_ci(np.array([estimator(n, c, k) for n, c in pairs]))
            out |= {metric.key: mean, f"{metric.key}_ci_low": low, f"{metric.key}_ci_high": high}
    repeated = per[per["n"] >= 2]
    out[TSQ_SPREAD.key] = float(repeated["std"].mean()) if len(repeated) else np.nan
    return out


def per_scenario(trials: pd.DataFrame) -> pd.DataFrame:
    """One row per (source, level, scenario): the counts every quality figure is built from
    (`n` counted trials, `c` solved, infra failures, mean TSQ), for checking by hand."""
    trials = with_solved(trials)[0]
    keys = ["source", "level", "scenario_id"]
    counted = view(trials, "counted").groupby(keys)
    out = pd.DataFrame({"n": counted.size(), "c": counted["solved"].sum(),
                        "tsq_mean": counted["tsq"].mean()})
    infra = trials[trials["status"] == "infra_failed"].groupby(keys).size()
    out = out.join(infra.rename("n_infra_failed"), how="outer").fillna(
        {"n": 0, "c": 0, "n_infra_failed": 0})
    return out.reset_index()


def gold_perfect_figures(records: list[dict[str, float]]) -> dict[str, float]:
    """Mean and scenario bootstrap CI of each `GOLD_PERFECT_KEYS` over one record per scenario
    (expected.json's `gold_perfect`); a goal share only over scenarios with the goals it counts,
    as the trials' own figure is (`_GOAL_COUNTS`)."""
    out: dict[str, float] = {}
    frame = pd.DataFrame(records)
    for key in GOLD_PERFECT_KEYS:
        rows = _with_goals(frame, key) if len(frame) else frame
        values = rows[key].to_numpy(dtype=float) if key in rows else np.array([])
        mean, low, high = bootstrap_mean_ci(values)
        out |= {f"gold_perfect_{key}_mean": mean, f"gold_perfect_{key}_ci_low": low,
                f"gold_perfect_{key}_ci_high": high}
    return out
