"""Status classes: who is to blame for a trial that did not score cleanly."""

from __future__ import annotations

import pytest

from analysis.status import classify


def status(**kw):
    base = dict(has_result=True, job_finished=True, exception_type=None, exception_message=None,
                agent_status="ok", agent_reason=None, agent_attempts=1, has_reward=True)
    base.update(kw)
    return classify(**base)[0]


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
    ({"exception_type": "APIConnectionError"}, "infra_failed"),
    ({"exception_type": "RateLimitError", "has_reward": False}, "infra_failed"),
    ({"exception_type": "AgentTimeoutError"}, "agent_failed"),
    ({"exception_type": "ContextLengthExceededError"}, "agent_failed"),
    ({"exception_type": "EnvironmentStartTimeoutError"}, "harness_failed"),
    ({"exception_type": "VerifierTimeoutError"}, "harness_failed"),
    # Harbor stopped: nobody failed, whatever the agent thought was going on.
    ({"exception_type": "CancelledError"}, "interrupted"),
    ({"exception_type": "CancelledError", "agent_status": "agent_error"}, "interrupted"),
    ({"exception_type": "CancelledError", "agent_status": "infra_error"}, "interrupted"),
    ({"exception_type": "RuntimeError"}, "harness_failed"),
    ({"exception_type": "RuntimeError", "agent_status": "agent_error"}, "agent_failed"),
    # The agent's own verdict on the server outranks the exception Harbor saw.
    ({"exception_type": "AgentTimeoutError", "agent_status": "infra_error"}, "infra_failed"),
])
def test_classification(kw, expected):
    assert status(**kw) == expected


def test_reason_names_the_cause():
    _, reason = classify(has_result=True, job_finished=True, exception_type="AgentTimeoutError",
                         exception_message="took 600 s", agent_status=None, agent_reason=None,
                         agent_attempts=None, has_reward=False)
    assert reason == "AgentTimeoutError: took 600 s"
    _, reason = classify(has_result=True, job_finished=True, exception_type=None,
                         exception_message=None, agent_status="infra_error",
                         agent_reason="HTTP 503 after 3 retries", agent_attempts=1,
                         has_reward=False)
    assert "HTTP 503 after 3 retries" in reason


def test_interrupted_says_harbor_was_stopped():
    _, reason = classify(has_result=True, job_finished=True, exception_type="CancelledError",
                         exception_message="", agent_status="infra_error",
                         agent_reason="agent timeout while waiting for the LLM server",
                         agent_attempts=1, has_reward=False)
    assert reason == "interrupted (Harbor was stopped)"
