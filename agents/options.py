"""The agent's options, as `harbor run --ak key=value` passes them (validated, documented)."""

from __future__ import annotations

import difflib
import os
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"


TEMPLATE_FIELDS = ("scenario_id", "trial_name", "session_id", "attempt", "step", "role",
                   "request_index", "turn")


class _Options(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ClientOptions(_Options):
    """How the LLM client reaches the server and how hard it tries (each default said once)."""

    api_key_env: str = Field("OPENAI_API_KEY",
                             description="Environment variable holding the API key (never "
                             "stored; unset: a dummy key, for local servers).")
    request_timeout_s: float = Field(120.0, gt=0, description="Connect/read timeout per try.")
    max_attempts: int = Field(4, ge=1, le=20, description="Tries per LLM request (retries+1).")
    backoff_initial_s: float = Field(0.5, ge=0, description="Back-off scale before a retry.")
    backoff_max_s: float = Field(8.0, ge=0, description="Longest back-off between tries.")
    session_header: bool = Field(True, description="Send x-dynamo-session-id per trial.")
    session_close: bool = Field(
        True, description="End the trial's session with one more one-token request carrying "
        "x-dynamo-session-final: true, as Dynamo's agent integrations do (with session_header).")
    server_timing: bool = Field(True, description="Ask Dynamo for nvext worker ids and timing.")
    quick_ack: bool = Field(
        True, description="Acknowledge each response head at once (Linux TCP_QUICKACK), so a "
        "server that leaves Nagle on cannot hold the first token back for a delayed ACK.")
    tokenizer: str | None = Field(
        None, description="Tokenizer (a tokenizers JSON file or a model folder with "
        "tokenizer.json) that counts tokens when the server sends no usage; such counts are "
        "marked token_source=client.")
    nvext_annotations: list[str] = Field(
        default_factory=list,
        description="nvext annotation templates, e.g. 'output_replay_id:{scenario_id}:"
        "{request_index}' (fields: " + ", ".join(TEMPLATE_FIELDS) + ").",
    )
    hint_osl: int | None = Field(
        None, ge=1, description="Send nvext.agent_hints.osl (expected output tokens per call; "
        "the thompson router queues by it, see docs/serving.md).")
    hint_priority: int | None = Field(None, description="Send nvext.agent_hints.priority.")

    @model_validator(mode="before")
    @classmethod
    def _split_annotations(cls, data: Any) -> Any:
        # `--ak nvext_annotations=a,b` arrives as one string.
        if isinstance(data, dict) and isinstance(data.get("nvext_annotations"), str):
            data = {**data, "nvext_annotations": [
                a for a in data["nvext_annotations"].split(",") if a]}
        return data

    @model_validator(mode="after")
    def _check_templates(self) -> Self:
        fields = dict.fromkeys(TEMPLATE_FIELDS, "x")
        for template in self.nvext_annotations:
            try:
                template.format(**fields)
            except (KeyError, IndexError, ValueError) as exc:
                raise ValueError(f"nvext_annotations template {template!r}: {exc}") from None
        return self


class ClientSettings(ClientOptions):
    """One client: where to send, which model, and the client options."""

    base_url: str = Field(description="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1")
    model: str = Field(description="Model name as the server lists it.")

    @classmethod
    def of(cls, options: ClientOptions, base_url: str, model: str) -> ClientSettings:
        shared = options.model_dump(include=set(ClientOptions.model_fields))
        return cls(**shared, base_url=base_url, model=model)


class LoopOptions(_Options):
    """How the ReAct loop runs an attempt."""

    tool_mode: Literal["native", "text"] = Field(
        "native", description="native: OpenAI tool calls; text: Thought/Action/Observation."
    )
    tool_choice: Literal["auto", "required", "first"] = Field(
        "auto", description="native mode: auto lets the model choose; required forces a tool "
        "call every turn (the attempt then ends at max_steps); first forces one on the first "
        "turn of each attempt and leaves the rest to the model (for small models that rarely "
        "call tools by themselves).",
    )
    parallel_tool_calls: bool | None = Field(
        None, description="native mode: the requests' parallel_tool_calls when set. false: at "
        "most one call per turn, so a forced turn ends after its call (a small model otherwise "
        "keeps adding calls until max_tokens cuts the last one short).",
    )
    max_steps: int = Field(12, ge=1, le=200, description="Model turns per attempt.")
    max_calls_per_step: int = Field(8, ge=1, le=100, description="Tool calls run per turn.")
    max_argument_chars: int = Field(8000, ge=2, description="Longest tool-call argument text.")
    temperature: float | None = Field(0.0, ge=0, le=2, description="Sampling temperature.")
    max_tokens: int = Field(1024, ge=1, description="Completion token limit per request.")
    bank_timeout_s: int = Field(60, ge=1, description="Seconds one bank call may take.")

    def sampling(self) -> dict[str, Any]:
        """The request parameters every call of the trial shares."""
        params: dict[str, Any] = {"max_tokens": self.max_tokens}
        if self.temperature is not None:
            params["temperature"] = self.temperature
        return params


class SelfEvalOptions(_Options):
    """The self-evaluation loop around attempts."""

    self_eval: bool = Field(False, description="Judge each attempt and retry when rejected.")
    max_retries: int = Field(2, ge=0, le=10, description="Extra attempts after a rejection.")
    min_confidence: float = Field(0.7, ge=0, le=1,
                                  description="Evaluator confidence needed to accept.")
    pass_feedback: bool = Field(True,
                                description="Give the evaluator's reasoning to the retry.")
    eval_model: str | None = Field(None, description="Evaluator model (default: the agent's).")
    eval_base_url: str | None = Field(None, description="Evaluator endpoint (default: agent's).")
    eval_json_mode: bool = Field(
        False, description="Ask the evaluator for response_format json_object."
    )


class ConversationOptions(_Options):
    """Who plays the customer in a conversation-mode task (ignored in the other modes). The
    customer runs inside the task environment; these pick it for `bank say`."""

    user_simulator: Literal["scripted", "llm"] = Field(
        "scripted", description="scripted: the environment's deterministic customer (no "
        "model); llm: Galileo's user-simulator protocol on user_base_url/user_model.")
    user_base_url: str | None = Field(
        None, description="user_simulator=llm: OpenAI-compatible endpoint of the customer's "
        "model, as the environment reaches it.")
    user_model: str | None = Field(None, description="user_simulator=llm: the customer's model.")
    user_api_key_env: str | None = Field(
        None, description="user_simulator=llm: environment variable holding the customer "
        "endpoint's key (read from the agent's environment when `bank say` runs, passed only "
        "in that command's environment; unset: no key).")

    @model_validator(mode="after")
    def _llm_needs_an_endpoint(self) -> Self:
        if self.user_simulator == "llm":
            missing = [n for n in ("user_base_url", "user_model") if not getattr(self, n)]
            if missing:
                raise ValueError("user_simulator=llm needs " + " and ".join(
                    f"--ak {n}=…" for n in missing))
        return self


class BankingAgentOptions(ClientOptions, LoopOptions, SelfEvalOptions, ConversationOptions):
    """Every `--ak` option of the agent: the four groups above plus where to send."""

    base_url: str = Field(
        default_factory=lambda: os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL,
        description="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL, else "
        f"{DEFAULT_BASE_URL}).",
    )
    model: str | None = Field(None, description="Model name; default: harbor's -m.")


def parse_options(kwargs: dict[str, Any]) -> BankingAgentOptions:
    """Validate `--ak` kwargs; raise ValueError with one line per bad option."""
    try:
        return BankingAgentOptions.model_validate(kwargs)
    except ValidationError as exc:
        problems = []
        for err in exc.errors(include_url=False, include_input=False):
            name = ".".join(str(p) for p in err["loc"])
            if not name:  # a check across options says which ones itself
                problems.append(err["msg"].removeprefix("Value error, "))
            elif err["type"] == "extra_forbidden":
                close = difflib.get_close_matches(name, BankingAgentOptions.model_fields, n=1)
                hint = f" (did you mean --ak {close[0]}?)" if close else ""
                problems.append(f"unknown option --ak {name}{hint}")
            else:
                problems.append(f"--ak {name}: {err['msg']}")
        raise ValueError("BankingAgent: " + "; ".join(problems)) from None


def key_values(items: list[str], option: str = "--ak") -> dict[str, str]:
    """`KEY=VALUE` command-line items → a dict; ValueError naming the bad item."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"{option} {item!r}: expected key=value")
        out[key] = value
    return out


def strip_provider(model: str | None) -> str | None:
    """`openai/my-model` → `my-model`: Harbor passes -m with a provider prefix."""
    if model and "/" in model:
        provider, rest = model.split("/", 1)
        if provider.lower() in {"openai", "hosted_vllm", "vllm", "dynamo", "nim", "local"}:
            return rest
    return model
