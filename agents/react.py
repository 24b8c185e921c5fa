"""One attempt of the ReAct loop: think, call bank tools, read their replies, until done.

`tool_mode="native"` uses OpenAI tool calls (several per turn allowed); `tool_mode="text"`
uses the Thought/Action protocol of `text_protocol`. Whatever the model gets wrong — a
malformed call, an unknown tool, arguments that are not JSON — becomes an observation it can
react to; only a failed LLM request (LLMCallFailed) leaves the loop early.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from agents import bank_bridge, text_protocol
from agents.llm import CallInfo, ChatResult, StreamingClient
from agents.records import CallLog
from agents.self_eval import CallSummary
from agents.trajectory import TrajectoryBuilder

SYSTEM_INTRO = (
    "You are a bank's customer-service agent. Carry out every request in the customer's "
    "message by calling the bank's tools with correct arguments. Make all the calls needed, "
    "then reply with a short summary for the customer and no further tool call."
)

EMPTY_REPLY_NUDGE = (
    "Your last reply was empty (no text and no readable tool call). Call the tools the "
    "request still needs, or reply with a short summary if everything is done."
)


@dataclass
class LoopSettings:
    tool_mode: Literal["native", "text"] = "native"
    max_steps: int = 12
    max_calls_per_step: int = 8
    max_argument_chars: int = 8000
    temperature: float | None = 0.0
    max_tokens: int = 1024
    bank_timeout_s: int = 60
    tool_choice: Literal["auto", "required", "first"] = "auto"


@dataclass
class TrialIdentity:
    trial_name: str
    scenario_id: str
    session_id: str | None


@dataclass
class AttemptResult:
    attempt: int
    calls: list[CallSummary] = field(default_factory=list)
    final_answer: str | None = None
    steps: int = 0
    stop_reason: Literal["final_answer", "max_steps"] = "max_steps"


def tool_choice_for(mode: str, step: int) -> str:
    """The request's `tool_choice` for the agent option `tool_choice` at a turn (1-based)."""
    if mode == "first":
        return "required" if step == 1 else "auto"
    return mode


class AttemptRunner:
    """Runs attempts for one trial; shares the client, call log and trajectory across them."""

    def __init__(self, client: StreamingClient, log: CallLog, env: Any, tools: list[dict],
                 ident: TrialIdentity, settings: LoopSettings, trace: TrajectoryBuilder) -> None:
        self.client, self.log, self.env, self.tools = client, log, env, tools
        self.ident, self.s, self.trace = ident, settings, trace

    async def run(self, instruction: str, attempt: int, feedback: str | None) -> AttemptResult:
        result = AttemptResult(attempt=attempt)
        user = instruction if not feedback else f"{instruction}\n\n{feedback}"
        if self.s.tool_mode == "text":
            system = text_protocol.system_prompt(self.tools, SYSTEM_INTRO)
        else:
            system = SYSTEM_INTRO
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": system}, {"role": "user", "content": user},
        ]
        self.trace.add("system", system, extra={"attempt": attempt})
        self.trace.add("user", user, extra={"attempt": attempt})
        for step in range(1, self.s.max_steps + 1):
            result.steps = step
            if self.s.tool_mode == "text":
                done = await self._text_step(messages, result, step)
            else:
                done = await self._native_step(messages, result, step)
            if done:
                result.stop_reason = "final_answer"
                break
        return result

    def _info(self, attempt: int, step: int) -> CallInfo:
        return CallInfo(self.ident.trial_name, self.ident.scenario_id, attempt, step, "agent",
                        self.ident.session_id, request_index=self.log.next_request_index())

    def _sampling(self) -> dict[str, Any]:
        params: dict[str, Any] = {"max_tokens": self.s.max_tokens}
        if self.s.temperature is not None:
            params["temperature"] = self.s.temperature
        return params

    async def _native_step(self, messages: list[dict], result: AttemptResult, step: int) -> bool:
        reply: ChatResult = await self.client.chat(
            messages, self._info(result.attempt, step), tools=self.tools,
            tool_choice=tool_choice_for(self.s.tool_choice, step),
            **self._sampling(),
        )
        if not reply.tool_calls and "<tool_call>" in reply.content:
            # The server's tool parser let a call through as text: it was malformed (or the
            # server parses none). Salvage a readable one, else tell the model what went wrong.
            return await self._malformed_native(messages, reply, result, step)
        if not reply.tool_calls and not reply.content.strip():
            # Nothing usable (e.g. a call so malformed the server's parser dropped it): say so
            # and let the model try again; max_steps bounds this.
            messages.append({"role": "assistant", "content": ""})
            messages.append({"role": "user", "content": EMPTY_REPLY_NUDGE})
            self.trace.add_model_turn(reply.record, "", observations=[(None, EMPTY_REPLY_NUDGE)],
                                      extra=_step_extra(result, step))
            return False
        if not reply.tool_calls:
            result.final_answer = reply.content
            messages.append({"role": "assistant", "content": reply.content})
            self.trace.add_model_turn(reply.record, reply.content, extra=_step_extra(result, step))
            return True
        # Only the calls that run go back into the history: a reply with hundreds of calls (or
        # a 200 kB argument) echoed there whole would overflow the context of every later
        # turn, so one hostile reply would end the trial. The trajectory keeps all of them.
        limit = self.s.max_calls_per_step
        ran, dropped = reply.tool_calls[:limit], reply.tool_calls[limit:]
        messages.append({
            "role": "assistant", "content": reply.content or None,
            "tool_calls": [{"id": tc.id, "type": "function",
                            "function": {"name": tc.name, "arguments": _history_arguments(
                                tc.arguments, self.s.max_argument_chars)}}
                           for tc in ran],
        })
        observations: list[tuple[str | None, str]] = []
        for tc in ran:
            text = await self._call(tc.name, tc.arguments, result)
            messages.append({"role": "tool", "tool_call_id": tc.id, "content": text})
            observations.append((tc.id, text))
        if dropped:
            refusal = _error(f"not run: at most {limit} tool calls per turn")
            observations += [(tc.id, refusal) for tc in dropped]
            messages.append({"role": "user", "content": _error(
                f"{len(dropped)} more tool calls of your last reply were not run: at most "
                f"{limit} tool calls per turn")})
        calls = [(tc.id, tc.name, tc.arguments) for tc in reply.tool_calls]
        self.trace.add_model_turn(reply.record, reply.content, calls, observations,
                                  extra=_step_extra(result, step))
        return False

    async def _malformed_native(self, messages: list[dict], reply: ChatResult,
                                result: AttemptResult, step: int) -> bool:
        parsed = text_protocol.parse_reply(reply.content)
        messages.append({"role": "assistant", "content": reply.content})
        call_id = f"{reply.record.request_id[:12]}-0"
        if parsed.action is not None:
            args = parsed.action_input or "{}"
            text = await self._call(parsed.action, args, result)
            calls = [(call_id, parsed.action, args)]
        else:
            text = _error("malformed tool call: write <tool_call>{\"name\": ..., \"arguments\": "
                          "{...}}</tool_call> with valid JSON, or use the tool-calling API")
            calls = []
        messages.append({"role": "user", "content": f"Tool result: {text}"})
        self.trace.add_model_turn(reply.record, reply.content, calls, [(call_id, text)],
                                  extra=_step_extra(result, step))
        return False

    async def _text_step(self, messages: list[dict], result: AttemptResult, step: int) -> bool:
        reply = await self.client.chat(
            messages, self._info(result.attempt, step), stop=text_protocol.STOP_SEQUENCES,
            **self._sampling(),
        )
        parsed = text_protocol.parse_reply(reply.content)
        content = reply.content.strip()
        messages.append({"role": "assistant", "content": content})
        if parsed.final_answer is not None:
            result.final_answer = parsed.final_answer
            self.trace.add_model_turn(reply.record, content, extra=_step_extra(result, step))
            return True
        call_id = f"{reply.record.request_id[:12]}-0"
        if parsed.action is None:
            text = _error(parsed.error or "unreadable reply")
            calls: list[tuple[str, str, str]] = []
        else:
            text = await self._call(parsed.action, parsed.action_input or "{}", result)
            calls = [(call_id, parsed.action, parsed.action_input or "{}")]
        messages.append({"role": "user", "content": text_protocol.observation_message(text)})
        self.trace.add_model_turn(reply.record, content, calls, [(call_id, text)],
                                  extra=_step_extra(result, step))
        return False

    async def _call(self, name: str, arguments: str, result: AttemptResult) -> str:
        """Send one call to the bank, or explain to the model why it was not sent."""
        name = (name or "").strip()
        if not name:
            return _error("the tool call has no tool name")
        if len(arguments) > self.s.max_argument_chars:
            return _error(f"arguments longer than {self.s.max_argument_chars} characters; "
                          "not sent")
        reply = await bank_bridge.call_tool(self.env, name, arguments or "{}", result.attempt,
                                            timeout_sec=self.s.bank_timeout_s)
        result.calls.append(CallSummary(name=name, arguments=arguments, ok=reply.ok))
        return reply.text


def _history_arguments(raw: str, max_chars: int) -> str:
    """Arguments as echoed back in the conversation. Servers reject a history whose tool call
    arguments are not a JSON object, so a malformed one is replaced there, and so is one too
    long to have been sent (the bank, the trajectory and the tool's error reply keep the
    original)."""
    if len(raw) > max_chars:
        return "{}"
    try:
        return raw if isinstance(json.loads(raw), dict) else "{}"
    except (json.JSONDecodeError, ValueError):
        return "{}"


def _error(message: str) -> str:
    return json.dumps({"error": message})


def _step_extra(result: AttemptResult, step: int) -> dict[str, Any]:
    return {"attempt": result.attempt, "react_step": step}
