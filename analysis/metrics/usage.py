"""Token use and the cost/benefit of the self-evaluation loop, per group of trials.

"Extra" work is what self-evaluation added: every evaluator call plus every agent call of
attempts after the first (`requests.self_eval_extra`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.metrics.base import Metric

ATTEMPTS = Metric("attempts_mean", "Attempts per trial", "attempts",
                  "Mean self-evaluation attempts per finished trial (tsq.json, else the calls).",
                  column="attempts/trial", better=None)
RETRIED = Metric("retried_share", "Trials retried", "share",
                 "Finished trials with more than one attempt / finished trials.",
                 column="trials retried", better=None)
EXTRA_TOKENS = Metric("extra_tokens_per_trial", "Extra tokens per trial", "tokens",
                      "Prompt + completion tokens of self-evaluation extra calls, per trial.",
                      column="extra tokens/trial", better="lower")
EXTRA_TOKEN_SHARE = Metric("extra_token_share", "Extra token share", "share",
                           "Tokens of extra calls / all tokens.", column="extra token share",
                           better="lower")
EXTRA_TIME_SHARE = Metric("extra_llm_time_share", "Extra LLM time share", "share",
                          "Σ e2e of extra calls / Σ e2e of all calls.",
                          column="extra LLM time share", better="lower")
TSQ_FIRST = Metric("tsq_first_attempt_mean", "TSQ first attempt", "score 0–1",
                   "Mean TSQ of attempt 1 (tsq.json) over counted trials.", column="TSQ 1st",
                   better="higher")
TSQ_SCORED = Metric("tsq_scored_attempt_mean", "TSQ accepted attempt", "score 0–1",
                    "Mean TSQ of the attempt the verifier scored, same trials.",
                    column="TSQ accepted", better="higher")
TSQ_GAIN = Metric("self_eval_tsq_gain", "Self-evaluation TSQ gain", "score 0–1",
                  "TSQ accepted − TSQ first attempt, mean over the same trials.", column="gain",
                  better="higher")
PROMPT_PER_TRIAL = Metric("prompt_tokens_per_trial", "Prompt tokens per scenario", "tokens",
                          "Mean Σ prompt tokens (server usage) per finished trial.",
                          column="prompt tokens", better=None)
COMPLETION_PER_TRIAL = Metric("completion_tokens_per_trial", "Completion tokens per scenario",
                              "tokens", "Mean Σ completion tokens per finished trial.",
                              column="completion tokens", better=None)
REQUESTS_PER_TRIAL = Metric("requests_per_trial", "LLM calls per scenario", "requests",
                            "Mean LLM calls per finished trial.", column="LLM calls", better=None)
CACHED_SHARE = Metric("cached_token_share", "Cached prompt share", "share",
                      "Σ cached prompt tokens / Σ prompt tokens over requests reporting both.",
                      column="cached prompt share", better="higher")

SELF_EVAL = (ATTEMPTS, RETRIED, EXTRA_TOKENS, EXTRA_TOKEN_SHARE, EXTRA_TIME_SHARE, TSQ_FIRST,
             TSQ_SCORED, TSQ_GAIN)
PER_SCENARIO = (REQUESTS_PER_TRIAL, PROMPT_PER_TRIAL, COMPLETION_PER_TRIAL, CACHED_SHARE)
METRICS = (*SELF_EVAL, PROMPT_PER_TRIAL, COMPLETION_PER_TRIAL, REQUESTS_PER_TRIAL, CACHED_SHARE)


def _ratio(num: float, den: float) -> float:
    return float(num / den) if den else np.nan


def usage_metrics(requests: pd.DataFrame, trials: pd.DataFrame) -> dict[str, float]:
    finished = trials[trials["status"] != "running"]
    attempts = finished["n_attempts"].dropna()
    counted = trials[trials["in_quality"].astype(bool)].dropna(
        subset=["tsq_first_attempt", "tsq_scored_attempt"])
    both = requests.dropna(subset=["prompt_tokens", "cached_tokens"])
    return {
        ATTEMPTS.key: float(attempts.mean()) if len(attempts) else np.nan,
        RETRIED.key: float((attempts > 1).mean()) if len(attempts) else np.nan,
        EXTRA_TOKENS.key: float(finished["extra_tokens"].mean()) if len(finished) else np.nan,
        EXTRA_TOKEN_SHARE.key: _ratio(trials["extra_tokens"].sum(), trials["total_tokens"].sum()),
        EXTRA_TIME_SHARE.key: _ratio(trials["extra_llm_s"].sum(), trials["llm_s"].sum()),
        TSQ_FIRST.key: float(counted["tsq_first_attempt"].mean()) if len(counted) else np.nan,
        TSQ_SCORED.key: float(counted["tsq_scored_attempt"].mean()) if len(counted) else np.nan,
        TSQ_GAIN.key: float((counted["tsq_scored_attempt"] - counted["tsq_first_attempt"]).mean())
        if len(counted) else np.nan,
        PROMPT_PER_TRIAL.key: float(finished["prompt_tokens"].mean()) if len(finished) else np.nan,
        COMPLETION_PER_TRIAL.key: float(finished["completion_tokens"].mean())
        if len(finished) else np.nan,
        REQUESTS_PER_TRIAL.key: float(finished["n_requests"].mean()) if len(finished) else np.nan,
        CACHED_SHARE.key: _ratio(both["cached_tokens"].sum(), both["prompt_tokens"].sum()),
    }
