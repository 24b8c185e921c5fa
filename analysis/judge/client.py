"""A small OpenAI-compatible chat client for the judge, on httpx + tenacity.

Hand-written rather than ragas or the openai SDK: Galileo's two session judgements are not
ragas metrics (and ragas cannot share this environment, docs/export.md), and one POST with
retries is all a judge needs. Retries (exponential back-off) on connection errors, 429 and
5xx; any other status is final. The key is read from an environment variable by the caller
and only ever sent as a header.
"""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
from pydantic import BaseModel, ValidationError
from tenacity import retry, retry_if_exception, stop_after_attempt, wait_exponential

from contracts.judge import JudgeAnswer, JudgeSample

RAW_KEEP = 2000


class JudgeHTTPError(RuntimeError):
    """The judge endpoint failed after retries (or with a status that is not retried)."""


class _Retryable(Exception):
    pass


class _Both(BaseModel):
    tool_selection_quality: JudgeAnswer
    action_completion: JudgeAnswer


def _retryable(exc: BaseException) -> bool:
    return isinstance(exc, _Retryable | httpx.TransportError)


class JudgeClient:
    def __init__(self, base_url: str, model: str, api_key: str | None = None,
                 timeout_s: float = 120.0, max_tokens: int = 512, attempts: int = 5,
                 max_wait_s: float = 20.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(timeout=timeout_s, headers=headers)
        self.max_tokens = max_tokens
        self._post = retry(retry=retry_if_exception(_retryable), reraise=True,
                           stop=stop_after_attempt(attempts),
                           wait=wait_exponential(multiplier=0.5, max=max_wait_s))(self._post_once)

    def close(self) -> None:
        self._http.close()

    def _post_once(self, body: dict[str, Any]) -> dict[str, Any]:
        response = self._http.post(f"{self.base_url}/chat/completions", json=body)
        if response.status_code == 429 or response.status_code >= 500:
            raise _Retryable(f"HTTP {response.status_code}")
        if response.status_code >= 400:
            raise JudgeHTTPError(f"HTTP {response.status_code}: {response.text[:200]}")
        return response.json()

    def complete(self, messages: list[dict[str, str]], temperature: float,
                 nvext: dict[str, Any] | None = None) -> str:
        body: dict[str, Any] = {"model": self.model, "messages": messages,
                                "temperature": temperature, "max_tokens": self.max_tokens,
                                "stream": False}
        if nvext:
            body["nvext"] = nvext
        try:
            data = self._post(body)
        except (_Retryable, httpx.HTTPError, ValueError) as exc:
            raise JudgeHTTPError(f"{type(exc).__name__}: {exc}") from exc
        try:
            return data["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError) as exc:
            raise JudgeHTTPError("answer without choices[0].message.content") from exc

    def sample(self, messages: list[dict[str, str]], temperature: float,
               nvext: dict[str, Any] | None = None) -> JudgeSample:
        """One judged sample; an endpoint failure or an unusable answer is recorded as such."""
        try:
            text = self.complete(messages, temperature, nvext)
        except JudgeHTTPError as exc:
            return JudgeSample(status="error", error=str(exc)[:500])
        return parse_answer(text)


_FENCE = re.compile(r"\{.*\}", re.DOTALL)


def parse_answer(text: str) -> JudgeSample:
    """The strict schema, tolerating only prose or a code fence around the one JSON object."""
    match = _FENCE.search(text)
    try:
        both = _Both.model_validate(json.loads(match.group(0) if match else text))
    except (ValueError, ValidationError, RecursionError):
        return JudgeSample(status="unparseable", raw=text[:RAW_KEEP])
    return JudgeSample(status="ok", tool_selection_quality=both.tool_selection_quality,
                       action_completion=both.action_completion)
