"""`harbor run --agent agents.banking:BankingAgent`: the banking ReAct agent as a Harbor agent.

Thin on purpose: options in `options.py`, the trial in `episode.py`, the loop in `react.py`,
the LLM client in `llm.py`. Runs on the host and acts only through `environment.exec` on the
task's mock bank. Writes into `<trial>/agent/`: `llm_calls.jsonl`, `trajectory.json`,
`agent_status.json`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harbor.agents.agent_auth_resolution import ResolvedModelConnection
from harbor.agents.base import BaseAgent
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext

from agents.attempt import TrialIdentity
from agents.episode import Episode
from agents.options import parse_options, strip_provider
from agents.trajectory import TrajectoryBuilder

AGENT_NAME = "bankbench-banking"
AGENT_VERSION = "0.1.0"
# Constructor arguments Harbor itself may pass; base_url is not among them: it is our option.
_FRAMEWORK_KWARGS = {"model_api_key_name", "model_api_format", "skip_model_parsing",
                     "override_setup_timeout_sec", "load_trajectory", "environment_logs_dir"}


def trial_identity(logs_dir: Path, agent_session: str | None,
                   session_header: bool) -> TrialIdentity:
    """Harbor names a trial `<task name>__<suffix>`, sets the agent's session_id to
    `<trial>__agent` and gives it `<trial>/agent` as logs_dir; the task name is the scenario id.
    """
    if agent_session and agent_session.endswith("__agent"):
        trial_name = agent_session[: -len("__agent")]
    else:
        trial_name = logs_dir.resolve().parent.name
    scenario_id = trial_name.split("__", 1)[0]
    return TrialIdentity(trial_name, scenario_id, trial_name if session_header else None)


class BankingAgent(BaseAgent):
    @classmethod
    def resolve_model_connection_config(cls, model_name: str | None, resolve_env: Any,
                                        **options: Any) -> ResolvedModelConnection:
        # The agent talks to its server itself (options.base_url / api_key_env); Harbor's
        # provider routing does not apply, so `--ak base_url=…` must not be refused by it.
        return ResolvedModelConnection(can_configure_base_url=True)

    @classmethod
    def preflight(cls, kwargs: dict[str, Any] | None = None, env: Any = None) -> None:
        # Bad --ak values fail once, before any trial is queued, naming the option.
        parse_options({k: v for k, v in (kwargs or {}).items() if k not in _FRAMEWORK_KWARGS})

    def __init__(self, logs_dir: Path, model_name: str | None = None, logger: Any = None,
                 mcp_servers: Any = None, skills_dir: str | None = None, *,
                 extra_env: dict[str, str] | None = None, **kwargs: Any) -> None:
        # Everything that is not Harbor's own constructor argument is ours: an unknown --ak
        # then fails loudly instead of being ignored.
        ours = {k: kwargs.pop(k) for k in list(kwargs) if k not in _FRAMEWORK_KWARGS}
        self.agent_options = parse_options(ours)
        # The agent reads its endpoint and model itself, so Harbor's provider parsing has nothing
        # to give it and would import LiteLLM (~4 CPU-s). `harbor run` gets the same through
        # the sweep's --skip-model-parsing-and-provider-mapping; this covers other hosts.
        kwargs.setdefault("skip_model_parsing", True)
        super().__init__(logs_dir, model_name, logger, mcp_servers, skills_dir,
                         extra_env=extra_env, **kwargs)
        model = self.agent_options.model or strip_provider(model_name)
        if not model:
            raise ValueError("BankingAgent: no model; pass -m <model> or --ak model=<name>")
        self.served_model = model

    @staticmethod
    def name() -> str:
        return AGENT_NAME

    def version(self) -> str | None:
        return AGENT_VERSION

    async def setup(self, environment: BaseEnvironment) -> None:
        return None  # nothing to install: the agent runs on the host

    async def run(self, instruction: str, environment: BaseEnvironment,
                  context: AgentContext) -> None:
        opts = self.agent_options
        ident = trial_identity(self.logs_dir, self.session_id, opts.session_header)
        public_options = opts.model_dump(mode="json")  # holds the key's env var name, not key
        trace = TrajectoryBuilder(AGENT_NAME, AGENT_VERSION, self.served_model,
                                  session_id=ident.trial_name, extra={"options": public_options})
        episode = Episode(opts, self.served_model, self.logs_dir, ident, trace, context)
        outcome = await episode.run(instruction, environment)
        if outcome.status.status != "ok":
            self.logger.warning("%s: %s: %s", ident.trial_name, outcome.status.status,
                                outcome.status.reason)


