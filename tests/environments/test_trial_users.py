"""Who runs a trial's commands, phase by phase (environments/trial_users.py)."""

from __future__ import annotations

from environments.trial_users import AGENT_UIDS, TrialUsers


def test_the_agent_phase_runs_as_the_trials_own_uid_and_root_only_when_asked():
    users = TrialUsers(userns=False)
    assert users.agent_uid in AGENT_UIDS and users.agent_uid % 2 == 0
    for user in (None, "agent", 1000):
        assert users.run_as(user) == (users.agent_uid, None)
    for user in ("root", "0", 0):
        assert users.run_as(user) == (None, None)


def test_verification_runs_as_root_or_as_a_verifier_uid_never_the_agents():
    users = TrialUsers(userns=False)
    users.verifying = True
    assert users.run_as(None) == (None, None)
    assert users.run_as("verifier") == (users.agent_uid + 1, None)
    assert users.verifier_uid != users.agent_uid


def test_without_root_everything_runs_as_namespace_root_and_says_so_once():
    users = TrialUsers(userns=True)
    assert users.run_as(None) == (None, None)
    uid, warning = users.run_as("agent")
    assert uid is None and "'agent'" in warning
    assert users.run_as("other") == (None, None)  # said once
