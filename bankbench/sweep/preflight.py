"""Before any Harbor job starts: are the options sound, is the server there, and does it serve
the model?

A sweep against a wrong or dead URL would otherwise start every trial, let each one exhaust its
retries, and end as a directory full of infra failures minutes later. One GET of `/models` with
a short timeout answers the question in a second and names the URL in the error.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

from bankbench.sweep.errors import BadOptions
from contracts.sweep import SweepConfig

if TYPE_CHECKING:  # parsed by the agent's own model, imported when options are checked
    from agents.options import BankingAgentOptions

DEFAULT_TIMEOUT_S = 5.0
DEFAULT_KEY_ENV = "OPENAI_API_KEY"


class PreflightFailed(RuntimeError):
    """The server cannot be used; the message names the URL and what to check."""


def models_url(base_url: str) -> str:
    return base_url.rstrip("/") + "/models"


def check_server(
    base_url: str, model: str, *, api_key_env: str = DEFAULT_KEY_ENV,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> list[str]:
    """Returns the served model ids; raises PreflightFailed with a one-line reason."""
    url = models_url(base_url)
    headers = {}
    key = os.environ.get(api_key_env)
    if key:
        headers["Authorization"] = f"Bearer {key}"
    try:
        resp = httpx.get(url, headers=headers, timeout=timeout_s)
    except httpx.TimeoutException:
        raise PreflightFailed(
            f"{url} did not answer within {timeout_s:g} s; is the server up and --base-url right?"
        ) from None
    except httpx.HTTPError as exc:
        raise PreflightFailed(
            f"cannot reach {url} ({exc.__class__.__name__}); is the server running and "
            "--base-url right (the OpenAI API root, e.g. http://host:8000/v1)?"
        ) from None
    if resp.status_code in (401, 403):
        raise PreflightFailed(
            f"{url} refused the request (HTTP {resp.status_code}); set the API key in "
            f"${api_key_env} (or name another variable with --ak api_key_env=NAME)"
        )
    if resp.status_code != 200:
        raise PreflightFailed(
            f"{url} answered HTTP {resp.status_code}; is --base-url the OpenAI API root "
            "(ending in /v1)?"
        )
    try:
        served = [str(m["id"]) for m in resp.json()["data"]]
    except (ValueError, KeyError, TypeError):
        raise PreflightFailed(
            f"{url} did not list models in the OpenAI format; is --base-url an "
            "OpenAI-compatible API root?"
        ) from None
    if served and not _is_served(model, served):
        shown = ", ".join(served[:5]) + (" …" if len(served) > 5 else "")
        raise PreflightFailed(f"model {model!r} is not served at {base_url} (served: {shown})")
    return served


def _is_served(model: str, served: list[str]) -> bool:
    # Harbor's `-m provider/name` form reaches the server as `name`.
    return model in served or model.split("/", 1)[-1] in served


def check_options(config: SweepConfig) -> BankingAgentOptions:
    """What can be checked before anything slow starts (building tasks, a server, Harbor): the
    agent's --ak options (the agent's own validation, as `bankbench check` applies it), the
    label method and its file, the dataset source. SweepError with one line. Returns the agent's
    options, parsed once for the sweep (its server checks ask the model and key they name)."""
    from agents.options import parse_options

    try:
        agent = parse_options(dict(config.agent_kwargs))
    except ValueError as exc:
        raise BadOptions(str(exc).removeprefix("BankingAgent: ")) from None
    if config.profile:  # a misspelt profile or --set key: before any task is built
        from bankbench.serve import api

        try:
            api.check(config.profile, router=config.router, workers=config.workers,
                      model=config.model, options=dict(config.server_options))
        except api.ServeError as exc:
            raise BadOptions(str(exc)) from None
    if config.tasks:
        return agent  # nothing is built
    from tasks.banking.labels import LabelsError
    from tasks.banking.labels.curated import read_labels_file
    from tasks.banking.labels.methods import method_of

    try:
        method, argument = method_of(config.labels)  # the registry's own check of the spec
        if method.name == "file":
            read_labels_file(Path(argument).expanduser())
    except LabelsError as exc:
        raise BadOptions(str(exc)) from None
    if config.source not in ("auto", "hf", "sample") and not Path(config.source).is_dir():
        raise BadOptions(f"--source {config.source}: no such directory (expected auto, hf, "
                         "sample or a folder in the hub's layout)")
    return agent
