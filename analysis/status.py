"""Trial status classes: who is to blame when a trial did not produce a clean score.

- `scored`: the verifier wrote rewards and nothing failed.
- `agent_failed`: the system under test failed on its own (agent reported `agent_error`, ran
  out of time or context, refused). It counts in quality averages: with its reward if the
  verifier wrote one, else as 0 (`reward_imputed`).
- `infra_failed`: the LLM server or the network failed (agent reported `infra_error`, or Harbor
  classifies the exception as a model-provider failure). Excluded from quality averages.
- `harness_failed`: the benchmark machinery failed (environment, the task's bank as the agent
  reported with `harness_error`, verifier, Harbor, an unclassified exception the agent did not
  explain, no reward). Excluded from quality.
- `interrupted` (`is_interrupted`, the one rule: the sweep asks it too): Harbor stopped the
  trial because Harbor itself was stopped (Ctrl-C, SIGTERM, a killed sweep); nothing failed and
  nothing was measured to the end. Excluded from quality; a resumed sweep runs it again.
- `running`: no result.json yet and the job has not finished. Counted, never scored.
"""

from __future__ import annotations

from typing import Literal

from harbor.models.trial.error_policy import FailureCause, policy_for

Status = Literal[
    "scored", "agent_failed", "infra_failed", "harness_failed", "interrupted", "running",
]
STATUSES: tuple[Status, ...] = (
    "scored", "agent_failed", "infra_failed", "harness_failed", "interrupted", "running",
)
QUALITY_STATUSES: frozenset[str] = frozenset({"scored", "agent_failed"})

_AGENT_CAUSES = {FailureCause.AGENT_EXHAUSTED_BUDGET, FailureCause.AGENT_REFUSED_TASK}
INTERRUPTED_REASON = "interrupted (Harbor was stopped)"


def is_interrupted(*, exception_type: str | None, has_reward: bool,
                   agent_attempts: int | None) -> bool:
    """Harbor stopped the trial because Harbor itself was stopped.

    Either Harbor recorded the cancellation (its error policy's `cancelled` cause), or it
    recorded nothing at all: no exception, no reward and an agent that reported no attempt
    (`agent_attempts` 0, or None when it reported nothing), which is what Harbor leaves for a
    trial it cancels on its way down when its sweep is killed (SIGKILL). A trial whose agent
    made an attempt and that then ended without a reward and without an error is a fault of
    the harness (`harness_failed`), kept: rerunning it would hide the fault."""
    if exception_type:
        return policy_for(exception_type).cause == FailureCause.CANCELLED
    return not has_reward and not agent_attempts


def classify(
    *,
    has_result: bool,
    job_finished: bool,
    exception_type: str | None,
    exception_message: str | None,
    agent_status: str | None,
    agent_reason: str | None,
    agent_attempts: int | None,
    has_reward: bool,
) -> tuple[Status, str]:
    """Status class of one trial and a one-line reason. `agent_attempts`: the attempts the
    agent reported (None when it reported nothing)."""
    if not has_result:
        if job_finished:
            return "harness_failed", "no result.json although the job finished"
        return "running", "no result.json yet"
    if is_interrupted(exception_type=exception_type, has_reward=has_reward,
                      agent_attempts=agent_attempts):
        # Harbor's own timeouts arrive as *TimeoutError; a bare cancellation is Harbor shutting
        # down. It outranks the agent's status, which may blame the server or itself for a
        # cancellation that was nobody's failure.
        return "interrupted", INTERRUPTED_REASON
    if agent_status == "harness_error":
        # The agent could not use the task's bank: a broken environment, whatever the
        # verifier then made of an empty intent log.
        return "harness_failed", f"agent: {agent_reason or 'harness_error'}"
    if agent_status == "infra_error":
        return "infra_failed", f"agent: {agent_reason or 'infra_error'}"
    if exception_type:
        what = f"{exception_type}: {exception_message or ''}".strip().rstrip(":")
        cause = policy_for(exception_type).cause
        if cause == FailureCause.MODEL_PROVIDER_FAILED:
            return "infra_failed", what
        if cause in _AGENT_CAUSES:
            return "agent_failed", what
        if cause == FailureCause.UNCLASSIFIED and agent_status == "agent_error":
            return "agent_failed", f"agent: {agent_reason or what}"
        return "harness_failed", what
    if agent_status == "agent_error":
        return "agent_failed", f"agent: {agent_reason or 'agent_error'}"
    if has_reward:
        return "scored", ""
    return "harness_failed", "finished without a reward"
