"""Trial status: a trial's status facts, read once, and the one rule that classes them.

**The rule.** A trial leaves the quality figures only for a failure of code the agent cannot
reach: the harness (Harbor, the environment), the verifier, or the LLM server as the project's
own client saw it. Whatever the agent's process tree, exit code, printed text, exceptions,
report to Harbor or files could have caused counts against the agent: `agent_failed`, scored
with its reward, or 0 without one. So:

- An exception Harbor recorded while the agent was set up or ran, or while Harbor read what
  it left (up to the start of verification), is the agent's, whatever its name: Harbor names
  an installed agent's non-zero exit after its printed text (`NonZeroAgentExitCodeError`,
  `NetworkConnectionError`, `ApiRateLimitError` ...) and an in-process agent's exception after
  its class, and an agent picks both.
- Only the project's own agent (`contracts.agent_status.PROJECT_AGENT`, by the import path
  Harbor recorded) is believed when it reports a server failure (`infra_error`: its client
  saw the server fail) or an unusable bank (`harness_error`); any other agent's report is
  not read at all.
- Failures before the agent ran (the environment's start, and the project's own agent's
  empty setup) and from verification on (the verifier, its reward, the environment's stop)
  are the harness's.

The classes:
- `scored`: the verifier wrote rewards and nothing failed.
- `agent_failed`: the system under test failed (see above), or the project's agent said so
  (`agent_error`: step limit, a request the server rejected as invalid). Counted in quality:
  with its reward if the verifier wrote one, else as 0 (`reward_imputed`).
- `infra_failed`: the project's agent reported that the LLM server failed it (retries
  exhausted, 401/403/404, Harbor's timeout while a request was waiting). Excluded.
- `harness_failed`: the benchmark machinery failed (environment start, verifier, the task's
  bank as the project's agent reported, no reward without an error). Excluded.
- `interrupted` (`is_interrupted`, which the sweep asks too): Harbor stopped the trial because
  Harbor itself was stopped (Ctrl-C, SIGTERM, a killed sweep); nothing failed and nothing was
  measured to the end. Excluded; a resumed sweep runs it again.
- `running`: no result.json yet and the job has not finished. Counted, never scored.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

from harbor.models.trial.error_policy import FailureCause, policy_for

from analysis import files
from contracts.agent_status import PROJECT_AGENT, AgentStatus

Status = Literal[
    "scored", "agent_failed", "infra_failed", "harness_failed", "interrupted", "running",
]
STATUSES: tuple[Status, ...] = (
    "scored", "agent_failed", "infra_failed", "harness_failed", "interrupted", "running",
)
QUALITY_STATUSES: frozenset[str] = frozenset({"scored", "agent_failed"})
# Where Harbor's recorded exception happened.
Phase = Literal["environment", "agent_setup", "agent", "verification"]

INTERRUPTED_REASON = "interrupted (Harbor was stopped)"


# Exceptions Harbor raises from verification on: where the record's time cannot be compared
# with the verifier's start (a result without `occurred_at`), these place it there and any
# other name in the agent phase (when in doubt, the agent's).
_VERIFICATION_RAISED = frozenset({"AddTestsDirError", "DownloadVerifierDirError"})


@dataclass(frozen=True)
class StatusFacts:
    """What a trial's status is decided from: Harbor's result, the reward, and the project's
    own agent's report (None for any other agent: not believed, not read)."""

    has_result: bool
    job_finished: bool
    has_reward: bool = False
    exception_type: str | None = None
    exception_message: str | None = None
    failed_in: Phase | None = None
    own_agent: bool = False
    agent_status: str | None = None
    agent_reason: str | None = None
    agent_attempts: int | None = None


@dataclass(frozen=True)
class TrialFacts:
    """One trial's status facts as read from its folder, with the files they came from (the
    reading layer takes its columns from these too)."""

    facts: StatusFacts
    result: files.TrialResultView | None
    agent: AgentStatus | None  # the project's agent's report (a running trial: its file)
    rewards: dict[str, float] | None


def failed_in(result: files.TrialResultView) -> Phase | None:
    """The phase in which Harbor's recorded exception happened (None: there is none)."""
    info = result.exception_info
    if info is None:
        return None
    if result.agent_execution is None or result.agent_execution.started_at is None:
        ran_setup = result.agent_setup is not None and result.agent_setup.started_at is not None
        return "agent_setup" if ran_setup else "environment"
    verifying = result.verifier.started_at if result.verifier else None
    if verifying is None:
        return "agent"
    if _comparable(info.occurred_at, verifying):
        return "agent" if info.occurred_at < verifying else "verification"  # type: ignore[operator]
    verifying_name = (info.exception_type in _VERIFICATION_RAISED or policy_for(
        info.exception_type).cause == FailureCause.VERIFIER_FAILED)
    return "verification" if verifying_name else "agent"


def _comparable(a: datetime | None, b: datetime) -> bool:
    return a is not None and (a.tzinfo is None) == (b.tzinfo is None)


def read_facts(trial_dir: Path, issues: list[files.Issue],
               job_finished: bool = False) -> TrialFacts:
    """Read a trial's status facts once: result.json, the reward, the exception, and the
    project's own agent's report."""
    result = files.read_trial_result(trial_dir, issues)
    own = result is not None and result.agent_import_path == PROJECT_AGENT
    agent = files.read_agent_status(trial_dir, issues, result) if own or result is None \
        else None
    rewards = result.verifier_result.rewards if result and result.verifier_result else None
    if rewards is None and result is not None:
        rewards = files.read_reward_file(trial_dir, issues)
    exc_type, exc_msg = files.trial_exception(trial_dir, result)
    facts = StatusFacts(
        has_result=result is not None, job_finished=job_finished, has_reward=bool(rewards),
        exception_type=exc_type, exception_message=exc_msg,
        failed_in=failed_in(result) if result is not None and exc_type else None,
        own_agent=own,
        agent_status=agent.status if agent else None,
        agent_reason=agent.reason if agent else None,
        agent_attempts=agent.attempts if agent else None,
    )
    return TrialFacts(facts, result, agent, rewards)


def trial_status(trial_dir: Path, job_finished: bool = False) -> tuple[Status, str]:
    """Status class and reason of one trial folder. The sweep asks it whether a trial was
    interrupted, or failed by the server."""
    return classify(read_facts(trial_dir, [], job_finished).facts)


def is_interrupted(facts: StatusFacts) -> bool:
    """Harbor stopped the trial because Harbor itself was stopped.

    Either Harbor recorded the cancellation (its error policy's `cancelled` cause), or it
    recorded nothing at all: no exception, no reward and an agent that reported no attempt
    (`agent_attempts` 0, or None when it reported nothing), which is what Harbor leaves for a
    trial it cancels on its way down when its sweep is killed (SIGKILL). A trial whose agent
    made an attempt and that then ended without a reward and without an error is a fault of
    the harness (`harness_failed`), kept: rerunning it would hide the fault."""
    if facts.exception_type:
        return policy_for(facts.exception_type).cause == FailureCause.CANCELLED
    return not facts.has_reward and not facts.agent_attempts


def classify(facts: StatusFacts) -> tuple[Status, str]:
    """Status class of one trial and a one-line reason (the rule in this module's doc)."""
    if not facts.has_result:
        if facts.job_finished:
            return "harness_failed", "no result.json although the job finished"
        return "running", "no result.json yet"
    if is_interrupted(facts):
        # It outranks the agent's status, which may blame the server or itself for a
        # cancellation that was nobody's failure.
        return "interrupted", INTERRUPTED_REASON
    reported = facts.agent_status if facts.own_agent else None
    said = f"agent: {facts.agent_reason or reported}"
    if reported == "harness_error":
        # The agent could not use the task's bank: a broken environment, whatever the
        # verifier then made of an empty intent log.
        return "harness_failed", said
    if reported == "infra_error":
        return "infra_failed", said
    if facts.exception_type:
        what = f"{facts.exception_type}: {facts.exception_message or ''}".strip().rstrip(":")
        harness = facts.failed_in in ("environment", "verification") or (
            facts.failed_in == "agent_setup" and facts.own_agent)
        return ("harness_failed" if harness else "agent_failed"), what
    if reported == "agent_error":
        return "agent_failed", said
    if facts.has_reward:
        return "scored", ""
    return "harness_failed", "finished without a reward"
