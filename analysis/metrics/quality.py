"""Tool-selection quality over trials that count (`in_quality`: scored and agent_failed).

Infra and harness failures are excluded here and counted in the status table instead.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.metrics.base import Metric, bootstrap_mean_ci, pass_at_k, pass_hat_k

_REWARDS = {
    "tsq": ("TSQ", "Tool Selection Quality: set F1 of normalised tool names, accepted attempt."),
    "precision": ("Precision", "Share of called tool names that were expected."),
    "recall": ("Recall", "Share of expected tool names that were called."),
    "param_validity": ("Param validity",
                       "Share of recorded calls whose arguments satisfy the tool schema."),
    "multiset_f1": ("Multiset F1", "F1 counting repeated calls of a tool."),
    "goal_coverage": ("Goal coverage", "Share of the customer's goals with a matching call."),
}
REWARD_METRICS = tuple(
    Metric(key, header, "score 0–1", True,
           f"{text} Mean over counted trials with a seeded 95% percentile-bootstrap CI "
           f"(`{key}_ci_low`, `{key}_ci_high`).")
    for key, (header, text) in _REWARDS.items()
)
PASS_AT_1 = Metric("pass_at_1", "pass@1", "share", True,
                   "Mean over scenarios of the share of its trials that pass (TSQ ≥ threshold).")
PASS_AT_K = Metric("pass_at_k", "pass@k", "share", True,
                   "Mean over scenarios of P(at least one of k trials passes), unbiased "
                   "estimator 1 − C(n−c,k)/C(n,k); k = fewest repeats of any scenario (≥ 2).")
PASS_HAT_K = Metric("pass_hat_k", "pass^k", "share", True,
                    "Mean over scenarios of P(all k trials pass) = C(c,k)/C(n,k): consistency.")
TSQ_SPREAD = Metric("tsq_scenario_std", "TSQ spread", "score 0–1", False,
                    "Mean over scenarios with ≥ 2 trials of the standard deviation of their TSQ.")

METRICS = (*REWARD_METRICS, PASS_AT_1, PASS_AT_K, PASS_HAT_K, TSQ_SPREAD)


def quality_metrics(trials: pd.DataFrame, pass_threshold: float = 1.0) -> dict[str, float]:
    counted = trials[trials["in_quality"].astype(bool)]
    out: dict[str, float] = {}
    for metric in REWARD_METRICS:
        mean, low, high = bootstrap_mean_ci(counted[metric.key].to_numpy(dtype=float))
        out[f"{metric.key}_mean"] = mean
        out[f"{metric.key}_ci_low"] = low
        out[f"{metric.key}_ci_high"] = high
    out.update(repeat_spread(counted, pass_threshold))
    return out


def repeat_spread(counted: pd.DataFrame, pass_threshold: float = 1.0) -> dict[str, float]:
    """pass@1, pass@k, pass^k and TSQ spread across repeated trials of each scenario."""
    scored = counted.dropna(subset=["tsq"])
    if scored.empty:
        return {PASS_AT_1.key: np.nan, PASS_AT_K.key: np.nan, PASS_HAT_K.key: np.nan,
                "k": np.nan, TSQ_SPREAD.key: np.nan}
    passed = scored["tsq"] >= pass_threshold - 1e-9
    per = pd.DataFrame({"n": scored.groupby("scenario_id").size(),
                        "c": passed.groupby(scored["scenario_id"]).sum(),
                        "std": scored.groupby("scenario_id")["tsq"].std(ddof=0)})
    k = int(per["n"].min())
    at_k = hat_k = np.nan
    if k >= 2:
        pairs = list(zip(per["n"].astype(int), per["c"].astype(int), strict=True))
        at_k = float(np.mean([pass_at_k(n, c, k) for n, c in pairs]))
        hat_k = float(np.mean([pass_hat_k(n, c, k) for n, c in pairs]))
    repeated = per[per["n"] >= 2]
    return {
        PASS_AT_1.key: float((per["c"] / per["n"]).mean()),
        PASS_AT_K.key: at_k,
        PASS_HAT_K.key: hat_k,
        "k": float(k),
        TSQ_SPREAD.key: float(repeated["std"].mean()) if len(repeated) else np.nan,
    }
