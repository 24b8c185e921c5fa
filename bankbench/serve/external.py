"""Profile external: any OpenAI-compatible server (NIM, vLLM, OpenAI…); nothing is launched."""

from __future__ import annotations

import os
from pathlib import Path

import httpx

from bankbench.serve.base import ComponentStatus, StartRequest
from bankbench.serve.errors import ServeError
from bankbench.serve.state import ServerState, save_state


def check_options(options: dict) -> str:
    """Validate the options without contacting the server; returns the base URL (…/v1)."""
    unknown = set(options) - {"url", "api_key_env"}
    if unknown:
        raise ServeError(f"unknown option {sorted(unknown)[0]!r} for profile external "
                         "(known: api_key_env, url)")
    url = str(options.get("url") or "").rstrip("/")
    if not url:
        raise ServeError("profile external needs --set url=http://host:port/v1")
    key_env = options.get("api_key_env")
    if key_env and not os.environ.get(key_env):
        raise ServeError(f"api_key_env={key_env}: that environment variable is empty")
    return url if url.endswith("/v1") else url + "/v1"


def connect(*, model: str | None, options: dict, state_dir: Path) -> ServerState:
    """Check the URL answers /v1/models and record it; options: url, api_key_env."""
    url = check_options(options)
    key_env = options.get("api_key_env")
    headers = {}
    if key_env:
        headers["Authorization"] = f"Bearer {os.environ[key_env]}"  # never written to disk
    try:
        resp = httpx.get(f"{url}/models", headers=headers, timeout=10)
        resp.raise_for_status()
        models = [m["id"] for m in resp.json().get("data", [])]
    except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
        raise ServeError(f"external: {url}/models did not answer ({type(exc).__name__})") from None
    if model is not None and models and model not in models:
        raise ServeError(f"external: model {model!r} not served at {url} (served: {models})")
    if model is None:
        if not models:
            raise ServeError(f"external: {url} lists no models; pass --model")
        model = models[0]
    state = ServerState(
        profile="external", base_url=url, model=model, router="external", workers=0,
        state_dir=state_dir,
        options={"url": url, "api_key_env": key_env},
    )
    save_state(state)
    return state


class ExternalProfile:
    name = "external"
    summary = "an existing OpenAI-compatible URL: --set url=…"
    launches = False

    def check(self, req: StartRequest) -> None:
        check_options(req.options)

    def start(self, req: StartRequest, state_dir: Path) -> ServerState:
        return connect(model=req.model, options=req.options, state_dir=state_dir)

    def dry_run(self, req: StartRequest, state_dir: Path) -> str:
        return f"# external: nothing is started; `up` checks {check_options(req.options)}/models\n"

    def stop(self, state: ServerState) -> None:
        """Nothing was started."""

    def alive(self, state: ServerState) -> list[ComponentStatus]:
        return []
