"""One attempt of the ReAct loop: think, call bank tools, read their replies, until done.

`tool_mode="native"` uses OpenAI tool calls (several per turn allowed); `tool_mode="text"`
uses the Thought/Action protocol of `text_protocol`. Whatever the model gets wrong — a
malformed call, an unknown tool, arguments that are not JSON — becomes an observation it can
react to; only a failed LLM request (LLMCallFailed) leaves the loop early.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agents import bank_bridge, text_protocol
from agents.attempt import AttemptResult, BankCall, TrialIdentity
from agents.llm import CallInfo, ChatResult, StreamingClient
from agents.options import LoopOptions
from agents.records import CallLog
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


EMPTY_SAY_NUDGE = ("Your Final Answer was empty, and an empty message cannot go to the "
                   "customer. Write the Final Answer you want the customer to read.")


def tool_choice_for(mode: str, step: int) -> str:
    """The request's `tool_choice` for the agent option `tool_choice` at a turn (1-based)."""
    if mode == "first":
        return "required" if step == 1 else "auto"
    return mode


def opening_messages(user: str, tools: list[dict], tool_mode: str, intro: str = SYSTEM_INTRO,
                     final_rule: tuple[str, str, str] = text_protocol.DONE_RULE
                     ) -> list[dict[str, Any]]:
    """The system and user messages an attempt starts with (text mode puts the tool schemas
    and `final_rule`, when to give a Final Answer, in the system prompt). `bankbench check`
    sends the same ones."""
    if tool_mode == "text":
        system = text_protocol.system_prompt(tools, intro, final_rule)
    else:
        system = intro
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def request_params(tools: list[dict], options: LoopOptions, step: int) -> dict[str, Any]:
    """The API parameters of the request at `step` (1-based) besides the messages."""
    if options.tool_mode == "text":
        return {"stop": text_protocol.STOP_SEQUENCES, **options.sampling()}
    params = {"tools": tools, "tool_choice": tool_choice_for(options.tool_choice, step),
              **options.sampling()}
    if options.parallel_tool_calls is not None:
        params["parallel_tool_calls"] = options.parallel_tool_calls
    return params


@dataclass
class StepResult:
    """One model turn as it is committed: what goes into the conversation history and what
    the trajectory shows. Built by one branch of the loop, committed in one place."""

    reply: ChatResult
    assistant: dict[str, Any]  # the assistant message echoed into the history
    text: str  # the turn's text as the trajectory shows it
    after: list[dict[str, Any]] = field(default_factory=list)  # tool results, nudges
    calls: list[tuple[str, str, str]] = field(default_factory=list)  # (id, tool, raw args)
    observations: list[tuple[str | None, str]] = field(default_factory=list)  # (id, text)
    final_answer: str | None = None


class AttemptRunner:
    """Runs attempts for one trial; shares the client, call log and trajectory across them."""

    def __init__(self, client: StreamingClient, log: CallLog, env: Any, tools: list[dict],
                 ident: TrialIdentity, options: LoopOptions, trace: TrajectoryBuilder) -> None:
        self.client, self.log, self.env, self.tools = client, log, env, tools
        self.ident, self.s, self.trace = ident, options, trace
        self._turn = 0  # the customer turn run_turn works on (bank calls are stamped with it)
        self.speaking = False  # conversation mode: a turn's final answer goes to the customer

    async def run(self, instruction: str, attempt: int, feedback: str | None) -> AttemptResult:
        """One attempt on a request given whole: one customer turn."""
        result = AttemptResult(attempt=attempt)
        user = instruction if not feedback else f"{instruction}\n\n{feedback}"
        messages = self.open(opening_messages(user, self.tools, self.s.tool_mode), attempt)
        await self.run_turn(messages, result, turn=0)
        return result

    def open(self, messages: list[dict[str, Any]], attempt: int) -> list[dict[str, Any]]:
        """Start an attempt's history with its system and first user message (also into the
        trajectory); the history it returns is the one every later step appends to."""
        for message in messages:
            self.trace.add(message["role"], message["content"],
                           extra={"attempt": attempt, "turn": 0})
        return messages

    async def run_turn(self, messages: list[dict[str, Any]], result: AttemptResult,
                       turn: int) -> str | None:
        """ReAct steps on the shared history `messages` until the model replies in text (the
        reply, returned) or max_steps steps of this turn pass (None). Steps count on across
        the attempt's turns."""
        for _ in range(self.s.max_steps):
            result.steps += 1
            number = result.steps
            info = CallInfo(self.ident.trial_name, self.ident.scenario_id, result.attempt,
                            number, "agent", self.ident.session_id,
                            request_index=self.log.next_request_index(), turn=turn)
            if self.s.tool_mode == "text":
                step = await self._text_step(messages, info, result)
            else:
                step = await self._native_step(messages, info, result)
            if self._commit(step, messages, result, info):
                result.stop_reason = "final_answer"
                return step.final_answer
        result.stop_reason = "max_steps"
        return None

    def _commit(self, step: StepResult, messages: list[dict[str, Any]], result: AttemptResult,
                info: CallInfo) -> bool:
        """The one place a model step enters both the history and the trajectory; True when
        it ended the turn with a reply to the customer."""
        messages.append(step.assistant)
        messages.extend(step.after)
        self.trace.add_model_turn(step.reply.record, step.text, step.calls, step.observations,
                                  extra={"attempt": result.attempt, "turn": info.turn,
                                         "react_step": info.step})
        if step.final_answer is not None:
            result.final_answer = step.final_answer
            return True
        return False

    async def _native_step(self, messages: list[dict], info: CallInfo,
                           result: AttemptResult) -> StepResult:
        reply: ChatResult = await self.client.chat(
            messages, info, **request_params(self.tools, self.s, info.step))
        if not reply.tool_calls and "<tool_call>" in reply.content:
            # The server's tool parser let a call through as text: it was malformed (or the
            # server parses none). Salvage a readable one, else tell the model what went wrong.
            return await self._malformed_native(reply, result)
        if not reply.tool_calls and not reply.content.strip():
            # Nothing usable (e.g. a call so malformed the server's parser dropped it): say so
            # and let the model try again; max_steps bounds this.
            return StepResult(reply, {"role": "assistant", "content": ""}, "",
                        after=[{"role": "user", "content": EMPTY_REPLY_NUDGE}],
                        observations=[(None, EMPTY_REPLY_NUDGE)])
        if not reply.tool_calls:
            return StepResult(reply, {"role": "assistant", "content": reply.content}, reply.content,
                        final_answer=reply.content)
        # Only the calls that run go back into the history: a reply with hundreds of calls (or
        # a 200 kB argument) echoed there whole would overflow the context of every later
        # turn, so one hostile reply would end the trial. The trajectory keeps all of them.
        limit = self.s.max_calls_per_step
        ran, dropped = reply.tool_calls[:limit], reply.tool_calls[limit:]
        step = StepResult(reply, {
            "role": "assistant", "content": reply.content or None,
            "tool_calls": [{"id": tc.id, "type": "function",
                            "function": {"name": tc.name, "arguments": _history_arguments(
                                tc.arguments, self.s.max_argument_chars)}}
                           for tc in ran],
        }, reply.content, calls=[(tc.id, tc.name, tc.arguments) for tc in reply.tool_calls])
        for tc in ran:
            text = await self._call(tc.name, tc.arguments, result)
            step.after.append({"role": "tool", "tool_call_id": tc.id, "content": text})
            step.observations.append((tc.id, text))
        if dropped:
            refusal = _error(f"not run: at most {limit} tool calls per turn")
            step.observations += [(tc.id, refusal) for tc in dropped]
            step.after.append({"role": "user", "content": _error(
                f"{len(dropped)} more tool calls of your last reply were not run: at most "
                f"{limit} tool calls per turn")})
        return step

    async def _malformed_native(self, reply: ChatResult, result: AttemptResult) -> StepResult:
        parsed = text_protocol.parse_reply(reply.content)
        call_id = f"{reply.record.request_id[:12]}-0"
        calls: list[tuple[str, str, str]] = []
        if parsed.action is not None:
            args = parsed.action_input or "{}"
            text = await self._call(parsed.action, args, result)
            calls = [(call_id, parsed.action, args)]
        else:
            text = _error("malformed tool call: write <tool_call>{\"name\": ..., \"arguments\": "
                          "{...}}</tool_call> with valid JSON, or use the tool-calling API")
        return StepResult(reply, {"role": "assistant", "content": reply.content}, reply.content,
                    after=[{"role": "user", "content": f"Tool result: {text}"}], calls=calls,
                    observations=[(call_id, text)])

    async def _text_step(self, messages: list[dict], info: CallInfo,
                         result: AttemptResult) -> StepResult:
        reply = await self.client.chat(messages, info,
                                       **request_params(self.tools, self.s, info.step))
        parsed = text_protocol.parse_reply(reply.content)
        content = reply.content.strip()
        assistant = {"role": "assistant", "content": content}
        if parsed.final_answer is not None and (parsed.final_answer.strip() or not self.speaking):
            return StepResult(reply, assistant, content, final_answer=parsed.final_answer)
        if parsed.final_answer is not None:  # an empty message cannot go to the customer
            return StepResult(reply, assistant, content,
                              after=[{"role": "user", "content": EMPTY_SAY_NUDGE}],
                              observations=[(None, EMPTY_SAY_NUDGE)])
        call_id = f"{reply.record.request_id[:12]}-0"
        calls: list[tuple[str, str, str]] = []
        if parsed.action is None:
            text = _error(parsed.error or "unreadable reply")
        else:
            text = await self._call(parsed.action, parsed.action_input or "{}", result)
            calls = [(call_id, parsed.action, parsed.action_input or "{}")]
        return StepResult(reply, assistant, content,
                    after=[{"role": "user", "content": text_protocol.observation_message(text)}],
                    calls=calls, observations=[(call_id, text)])

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
        result.calls.append(BankCall(name=name, arguments=arguments, ok=reply.ok,
                                     turn=self._turn))
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
