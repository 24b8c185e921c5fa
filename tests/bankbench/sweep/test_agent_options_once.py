"""The sweep parses the agent's --ak options once (preflight.check_options) and its server
checks ask for the model and key those options name, as the agent will."""

from __future__ import annotations

import pytest

from bankbench.sweep import preflight
from bankbench.sweep.errors import BadOptions
from bankbench.sweep.server_checks import ServerWatch
from contracts.sweep import SweepConfig


def _config(**agent_kwargs) -> SweepConfig:
    return SweepConfig(levels=[1], base_url="http://127.0.0.1:9/v1", model="served",
                       tasks="/nowhere", agent_kwargs=agent_kwargs)


def test_the_watch_asks_for_what_the_agent_will_ask_for():
    agent = preflight.check_options(_config(model="other", api_key_env="MY_KEY",
                                            max_attempts="2"))
    assert (agent.model, agent.api_key_env, agent.max_attempts) == ("other", "MY_KEY", 2)
    watch = ServerWatch(agent, "http://127.0.0.1:9/v1", "served")
    assert (watch.model, watch.key_env) == ("other", "MY_KEY")
    plain = ServerWatch(preflight.check_options(_config()), "http://127.0.0.1:9/v1", "served")
    assert (plain.model, plain.key_env) == ("served", "OPENAI_API_KEY")


def test_a_bad_option_is_refused_before_anything_runs():
    with pytest.raises(BadOptions, match="unknown option --ak max_attempt .*max_attempts"):
        preflight.check_options(_config(max_attempt="2"))
