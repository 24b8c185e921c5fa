"""Counts of one group: trials by status class (docs/analysis.md, `analysis.status`), the
requests the serving figures are over, and who counted their tokens. Computed by
`analysis.summary`; defined here so the report names and defines them as every other figure."""

from __future__ import annotations

from analysis.metrics.base import Metric


def _count(key: str, column: str, text: str, unit: str = "trials", short: str = "") -> Metric:
    return Metric(key, column[:1].upper() + column[1:], unit, text, column=column, better=None,
                  short_header=short)


TRIALS = _count("n_trials", "trials", "Trial folders of the level, running ones included.")
SCORED = _count("n_scored", "scored", "Trials the verifier scored with nothing failing.")
AGENT_FAILED = _count("n_agent_failed", "agent failed",
                      "Trials the system under test failed on its own (counted in quality: "
                      "with its reward, else 0).")
INFRA_FAILED = _count("n_infra_failed", "infra failed",
                      "Trials lost to the LLM server or the network (excluded from quality).")
HARNESS_FAILED = _count("n_harness_failed", "harness failed",
                        "Trials lost to the benchmark machinery (excluded from quality).")
INTERRUPTED = _count("n_interrupted", "interrupted",
                     "Trials Harbor cancelled because it was stopped (excluded; a resumed "
                     "sweep runs them again).")
RUNNING = _count("n_running", "running", "Trials without a result yet.")
COUNTED = _count("n_counted", "counted in quality", "Scored plus agent-failed trials.",
                 short="counted")
EXCLUDED = _count("n_excluded", "excluded", "Infra-failed, harness-failed and interrupted "
                  "trials.")
EXCLUDED_SHARE = Metric(
    "excluded_share", "Excluded share", "share",
    "Excluded trials over finished ones (counted + excluded): the part of the level the quality "
    "figures leave out, shown beside TSQ. Only failures of code the agent cannot reach "
    "exclude a trial (docs/reliability.md); empty when no trial finished.",
    column="excluded share", better=None)
REQUESTS_UNREADABLE = _count(
    "n_requests_unreadable", "requests unreadable", "Call records that could not be read "
    "(invalid, out of bounds, or past the size limit on one call log); their trials keep "
    "their status and reward.", unit="requests")
REQUESTS = _count("n_requests", "requests", "LLM calls of the system under test (agent and "
                  "evaluator), failed ones included.", unit="requests")
CANCELLED_REQUESTS = _count(
    "n_cancelled_requests", "cancelled requests", "Requests of interrupted trials that did not "
    "finish (Harbor was stopped under them): not the server's errors, left out of error_rate.",
    unit="requests")
TOKEN_COUNTS = Metric("token_counts", "Tokens counted by", "–",
                      "Who counted the level's tokens: `server` (its usage), `client` (the "
                      "agent's tokenizer), `mixed`, or `unknown`.", column="tokens counted by",
                      better=None)

TRIAL_COUNTS = (TRIALS, SCORED, AGENT_FAILED, INFRA_FAILED, HARNESS_FAILED, INTERRUPTED,
                RUNNING, COUNTED, EXCLUDED, EXCLUDED_SHARE, REQUESTS_UNREADABLE)
METRICS = (TRIALS, SCORED, AGENT_FAILED, INFRA_FAILED, HARNESS_FAILED, INTERRUPTED, RUNNING,
           COUNTED, EXCLUDED, EXCLUDED_SHARE, REQUESTS_UNREADABLE, REQUESTS, CANCELLED_REQUESTS,
           TOKEN_COUNTS)
