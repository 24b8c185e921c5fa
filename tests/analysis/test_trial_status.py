"""Status classes: who is to blame for a trial that did not score cleanly. The rule: only a
failure of code the agent cannot reach takes a trial out of quality; what the agent could have
caused counts against it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from analysis.files import ExceptionView, PhaseTiming, TrialResultView
from analysis.status import StatusFacts, classify, failed_in


def status(**kw):
    base = dict(has_result=True, job_finished=True, own_agent=True, agent_status="ok",
                agent_attempts=1, has_reward=True)
    if kw.get("exception_type") and "failed_in" not in kw:
        base["failed_in"] = "agent"
    base.update(kw)
    return classify(StatusFacts(**base))[0]


@pytest.mark.parametrize("kw, expected", [
    ({}, "scored"),
    ({"has_result": False, "job_finished": False}, "running"),
    ({"has_result": False, "job_finished": True}, "harness_failed"),
    ({"agent_status": "infra_error"}, "infra_failed"),
    ({"agent_status": "agent_error"}, "agent_failed"),
    # An unusable bank is the benchmark's fault even when the verifier scored the empty log.
    ({"agent_status": "harness_error"}, "harness_failed"),
    ({"agent_status": "harness_error", "exception_type": "AgentTimeoutError"}, "harness_failed"),
    ({"agent_status": None}, "scored"),  # agent_status.json may be absent
    ({"has_reward": False}, "harness_failed"),  # the agent made its attempt: a fault, kept
    # Nothing recorded and no attempt: what a killed sweep's Harbor leaves (rerun on resume).
    ({"has_reward": False, "agent_attempts": 0}, "interrupted"),
    ({"has_reward": False, "agent_status": None, "agent_attempts": None}, "interrupted"),
    ({"has_reward": False, "agent_status": "infra_error", "agent_attempts": 0}, "interrupted"),
    ({"agent_attempts": 0}, "scored"),  # the verifier scored it: not interrupted
    ({"exception_type": "AgentTimeoutError"}, "agent_failed"),
    ({"exception_type": "ContextLengthExceededError"}, "agent_failed"),
    ({"exception_type": "EnvironmentStartTimeoutError", "failed_in": "environment"},
     "harness_failed"),
    ({"exception_type": "VerifierTimeoutError", "failed_in": "verification"}, "harness_failed"),
    ({"exception_type": "AddTestsDirError", "failed_in": "verification"}, "harness_failed"),
    # Harbor stopped: nobody failed, whatever the agent thought was going on.
    ({"exception_type": "CancelledError"}, "interrupted"),
    ({"exception_type": "CancelledError", "agent_status": "agent_error"}, "interrupted"),
    ({"exception_type": "CancelledError", "agent_status": "infra_error"}, "interrupted"),
    ({"exception_type": "RuntimeError", "agent_status": "agent_error"}, "agent_failed"),
    # The project's agent's own verdict on the server outranks the exception Harbor saw.
    ({"exception_type": "AgentTimeoutError", "agent_status": "infra_error"}, "infra_failed"),
    # Its setup is empty: a failure there is the harness's. Another agent's setup is its own.
    ({"exception_type": "RuntimeError", "failed_in": "agent_setup"}, "harness_failed"),
    ({"exception_type": "RuntimeError", "failed_in": "agent_setup", "own_agent": False},
     "agent_failed"),
])
def test_classification(kw, expected):
    assert status(**kw) == expected


@pytest.mark.parametrize("exception", [
    # What Harbor makes of an installed agent's exit code and printed text ...
    "NonZeroAgentExitCodeError", "NetworkConnectionError", "ApiRateLimitError",
    "ApiInternalServerError", "AgentAuthenticationError",
    # ... and of an in-process agent's exception, by its class name.
    "RateLimitError", "APIConnectionError", "RuntimeError", "EnvironmentStartTimeoutError",
    "VerifierTimeoutError", "RewardFileNotFoundError", "AddTestsDirError",
])
@pytest.mark.parametrize("has_reward", [True, False])
def test_whatever_the_agent_phase_raised_counts_against_the_agent(exception, has_reward):
    for own in (True, False):
        assert status(exception_type=exception, failed_in="agent", has_reward=has_reward,
                      own_agent=own) == "agent_failed"


@pytest.mark.parametrize("claim", ["infra_error", "harness_error", "agent_error", "ok"])
def test_only_the_project_agent_is_believed(claim):
    """Another agent's report to Harbor (its metadata) is not read: its trial counts."""
    assert status(agent_status=claim, own_agent=False) == "scored"
    assert status(agent_status=claim, own_agent=False, has_reward=False) == "harness_failed"
    assert status(agent_status=claim, own_agent=False, has_reward=False,
                  exception_type="NonZeroAgentExitCodeError") == "agent_failed"


T = datetime(2026, 1, 1, tzinfo=UTC)


def result_with(exception_at: timedelta | None, exception: str = "RuntimeError", *,
                setup: bool = True, agent: bool = True, verifier: bool = True,
                aware: bool = True) -> TrialResultView:
    def phase(start_s: float) -> PhaseTiming:
        start = T + timedelta(seconds=start_s)
        if not aware:
            start = start.replace(tzinfo=None)
        return PhaseTiming(started_at=start, finished_at=start + timedelta(seconds=1))
    at = None if exception_at is None else T + exception_at
    return TrialResultView(
        trial_name="t", task_name="x", environment_setup=phase(0),
        agent_setup=phase(1) if setup else None, agent_execution=phase(2) if agent else None,
        verifier=phase(4) if verifier else None,
        exception_info=ExceptionView(exception_type=exception, occurred_at=at))


def test_the_phase_of_an_exception_is_read_from_harbor_timing():
    second = timedelta(seconds=1)
    assert failed_in(result_with(0.5 * second, setup=False, agent=False,
                                 verifier=False)) == "environment"
    assert failed_in(result_with(1.5 * second, agent=False, verifier=False)) == "agent_setup"
    assert failed_in(result_with(2.5 * second, verifier=False)) == "agent"
    # After the agent ran, before verification: Harbor reading what the agent left.
    assert failed_in(result_with(3.5 * second)) == "agent"
    assert failed_in(result_with(4.5 * second)) == "verification"
    # No comparable clock: the names Harbor raises from verification on are the
    # verification's, any other (an exit code, an agent's own class) the agent's.
    assert failed_in(result_with(None, "NonZeroAgentExitCodeError")) == "agent"
    assert failed_in(result_with(None, "ApiRateLimitError")) == "agent"
    assert failed_in(result_with(None, "RuntimeError")) == "agent"
    assert failed_in(result_with(4.5 * second, "RewardFileNotFoundError",
                                 aware=False)) == "verification"
    assert failed_in(result_with(None, "AddTestsDirError")) == "verification"


def test_reason_names_the_cause():
    _, reason = classify(StatusFacts(
        has_result=True, job_finished=True, exception_type="AgentTimeoutError",
        exception_message="took 600 s", failed_in="agent"))
    assert reason == "AgentTimeoutError: took 600 s"
    _, reason = classify(StatusFacts(
        has_result=True, job_finished=True, own_agent=True, agent_status="infra_error",
        agent_reason="HTTP 503 after 3 retries", agent_attempts=1))
    assert "HTTP 503 after 3 retries" in reason


def test_interrupted_says_harbor_was_stopped():
    _, reason = classify(StatusFacts(
        has_result=True, job_finished=True, exception_type="CancelledError",
        exception_message="", own_agent=True, agent_status="infra_error",
        agent_reason="agent timeout while waiting for the LLM server", agent_attempts=1,
        failed_in="agent"))
    assert reason == "interrupted (Harbor was stopped)"


def _harbor_result(agent: dict) -> TrialResultView:
    return TrialResultView.model_validate({"trial_name": "banking-000__a", "task_name":
                                           "banking-000", "config": {"agent": agent}})


def test_the_agent_named_by_harbor_run_is_the_project_agent(tmp_path):
    """`harbor run --agent agents.banking:BankingAgent` (what the sweep runs) records the
    import path as the agent's name: its report is believed, and a server outage it reports
    takes the trial out of quality although the verifier scored the empty intent log."""
    import json

    from analysis.status import trial_status
    from contracts.agent_status import PROJECT_AGENT

    assert _harbor_result({"name": PROJECT_AGENT, "import_path": None}
                          ).agent_import_path == PROJECT_AGENT
    assert _harbor_result({"name": None, "import_path": PROJECT_AGENT}
                          ).agent_import_path == PROJECT_AGENT
    assert _harbor_result({"name": "terminus-2"}).agent_import_path is None
    assert _harbor_result({"name": "acp:some-agent"}).agent_import_path is None

    trial = tmp_path / "banking-000__a"
    trial.mkdir()
    (trial / "result.json").write_text(json.dumps({
        "trial_name": trial.name, "task_name": "banking-000",
        "config": {"agent": {"name": PROJECT_AGENT, "import_path": None}},
        "agent_result": {"metadata": {
            "status": "infra_error", "attempts": 0,
            "status_reason": "LLM request failed after 4 tries: http_503"}},
        "verifier_result": {"rewards": {"tsq": 0.0}}}))
    assert trial_status(trial, job_finished=True) == (
        "infra_failed", "agent: LLM request failed after 4 tries: http_503")
