"""One trial end to end: discover tools, run attempts, judge them, mark the accepted one.

Never raises for something the agent or the server did: the outcome goes to
`agent_status.json` (ok / agent_error / infra_error / harness_error) and the AgentContext
metadata, and the trial proceeds to verification with whatever the bank recorded.

How a failure is classed:
- harness_error: the bank could not list tools, or (conversation mode) the bank's `say`
  machinery failed or the instruction holds no customer message. The task environment is
  the benchmark's own machinery, so neither the model nor the server is to blame.
- infra_error: an LLM request failed with 429/5xx/timeout/
  dropped connection after every retry; the server refused the setup (401/403/404: bad key,
  URL or model name); the llm customer's endpoint failed on the server's side (`bank say`
  said so: timeout, connection, 429, 5xx, 401/403/404).
- agent_error: the server rejected a request as invalid (other 4xx, e.g. context too long),
  the attempt hit max_steps without a final answer, or the model's reply to the customer
  was refused by `say` or led the llm customer's endpoint to reject it or answer nothing.
- Harbor's agent timeout (the task is cancelled): infra_error when an LLM request was under
  way, agent_error otherwise; the status file is written before the cancellation goes on.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents import bank_bridge
from agents.attempt import AttemptResult, TrialIdentity
from agents.conversation import ConversationRunner, first_message, is_conversation
from agents.llm import CallInfo, LLMCallFailed, StreamingClient
from agents.options import BankingAgentOptions, ClientSettings
from agents.react import AttemptRunner
from agents.records import CallLog, write_status
from agents.self_eval import (
    Verdict,
    evaluator_messages,
    parse_verdict,
    retry_feedback,
)
from agents.trajectory import TrajectoryBuilder
from contracts.agent_status import AgentStatus
from contracts.llm_calls import EVALUATOR_ROLE, SESSION_CLOSE_ROLE

_SETUP_REFUSALS = {401, 403, 404}
# A failed `bank say`, by whose failure it was (bank_bridge.CustomerFailed.cause).
_SAY_FAILURE = {"endpoint": "infra_error", "message": "agent_error", "harness": "harness_error"}


@dataclass
class EpisodeOutcome:
    status: AgentStatus
    verdicts: list[Verdict] = field(default_factory=list)
    attempts: list[AttemptResult] = field(default_factory=list)


_CONTEXT_WORDS = re.compile(r"context|too long|too many tokens|maximum .*length|exceed",
                            re.IGNORECASE)


def classify_llm_failure(exc: LLMCallFailed) -> tuple[str, str]:
    record = exc.record
    status = record.http_status
    reason = str(exc) + likely_cause(exc)
    if exc.repeated:
        return "infra_error", (f"LLM request failed the same way twice in a row, not retried "
                               f"further: {reason}")
    if exc.retryable:
        return "infra_error", f"LLM request failed after {record.retries + 1} tries: {reason}"
    if status in _SETUP_REFUSALS:
        return "infra_error", f"server refused the request ({status}): {reason}"
    return "agent_error", f"server rejected the request ({status}): {reason}"


def likely_cause(exc: LLMCallFailed) -> str:
    """What a repeated or client-side failure most likely means, when the error says so."""
    record = exc.record
    message = record.error.message if record.error else ""
    context_like = record.http_status == 413 or bool(_CONTEXT_WORDS.search(message))
    cut_short = exc.repeated and record.error is not None and record.error.type == "bad_stream"
    if not (context_like or cut_short) or not exc.request_chars:
        return ""
    # ~4 characters per token for English text and JSON schemas: a size, not a count.
    tokens = exc.request_chars / 4 / 1000
    return (f" (prompt ~{tokens:.1f}k tokens, estimated from {exc.request_chars:,} request "
            "characters; the server's context may be smaller)")


class Episode:
    def __init__(self, opts: BankingAgentOptions, model: str, logs_dir: Path,
                 ident: TrialIdentity, trace: TrajectoryBuilder, context: Any) -> None:
        self.opts, self.model, self.logs_dir, self.ident = opts, model, logs_dir, ident
        self.trace, self.context = trace, context
        self.log = CallLog(logs_dir)
        self.client = StreamingClient(ClientSettings.of(opts, opts.base_url, model),
                                      sink=self._on_record)
        eval_model = opts.eval_model or model
        eval_url = opts.eval_base_url or opts.base_url
        if (eval_model, eval_url) == (model, opts.base_url):
            self.eval_client = self.client
        else:
            self.eval_client = StreamingClient(ClientSettings.of(opts, eval_url, eval_model),
                                               sink=self._on_record)
        self.outcome = EpisodeOutcome(status=AgentStatus(status="ok"))

    def _on_record(self, record) -> None:
        self.log.append(record)
        prompt, cached, completion = self.log.token_totals()
        self.context.n_input_tokens = prompt
        self.context.n_cache_tokens = cached
        self.context.n_output_tokens = completion
        measured = self.log.measured()
        self.outcome.status.llm_calls = len(measured)
        self.outcome.status.failed_llm_calls = sum(1 for r in measured if r.error)

    async def run(self, instruction: str, environment: Any) -> EpisodeOutcome:
        status = self.outcome.status
        cancelled = False
        try:
            await self._run(instruction, environment)
        except bank_bridge.BankUnavailable as exc:
            status.status, status.reason = "harness_error", f"bank unavailable: {exc}"
        except bank_bridge.CustomerFailed as exc:
            status.status = _SAY_FAILURE[exc.cause]
            status.reason = f"customer unavailable: {exc}"
        except LLMCallFailed as exc:
            status.status, status.reason = classify_llm_failure(exc)
        except asyncio.CancelledError:
            cancelled = True  # nothing more is sent: the session then ends at its time-out
            # Harbor's agent timeout. Waiting on the server is the server's fault.
            waiting = self.client.cancelled_in_flight or self.eval_client.cancelled_in_flight
            status.status = "infra_error" if waiting else "agent_error"
            status.reason = "agent timeout while " + (
                "waiting for the LLM server" if waiting else "running tools")
            raise
        finally:
            if not cancelled and self.opts.session_close:
                await self._close_sessions()
            await self.client.aclose()
            if self.eval_client is not self.client:
                await self.eval_client.aclose()
            self._publish()
        return self.outcome

    async def _run(self, instruction: str, environment: Any) -> None:
        opts, status = self.opts, self.outcome.status
        tools = await bank_bridge.list_tools(environment)
        self.trace.set_tools(tools)
        runner = AttemptRunner(self.client, self.log, environment, tools, self.ident,
                               opts, self.trace)
        run_attempt = runner.run
        if is_conversation(instruction):
            instruction = first_message(instruction)
            if not instruction:
                raise bank_bridge.CustomerFailed("the conversation-mode instruction holds no "
                                                 "customer message")
            run_attempt = ConversationRunner(runner, opts, self.log).run
        total = 1 + (opts.max_retries if opts.self_eval else 0)
        feedback: str | None = None
        for attempt in range(1, total + 1):
            result = await run_attempt(instruction, attempt, feedback)
            self.outcome.attempts.append(result)
            status.attempts = attempt
            self._publish()
            if not opts.self_eval:
                break
            verdict = await self._evaluate(instruction, tools, result)
            self.outcome.verdicts.append(verdict)
            self._publish()
            if verdict.accepted:
                if await bank_bridge.accept(environment, attempt):
                    status.accepted_attempt = attempt
                break
            feedback = retry_feedback(verdict) if opts.pass_feedback else None
        last = self.outcome.attempts[-1]
        if last.stop_reason == "max_steps":
            status.status = "agent_error"
            status.reason = f"attempt {last.attempt} reached max_steps={opts.max_steps} " \
                            "without a " + ("reply to the customer" if last.transcript
                                            else "final answer")

    async def _evaluate(self, instruction: str, tools: list[dict],
                        result: AttemptResult) -> Verdict:
        messages = evaluator_messages(instruction, tools, result.calls, result.final_answer,
                                      result.transcript)
        info = CallInfo(self.ident.trial_name, self.ident.scenario_id, result.attempt, 0,
                        "evaluator", self.ident.session_id,
                        request_index=self.log.next_request_index(), turn=result.turns)
        params = self.opts.sampling()
        if self.opts.eval_json_mode:
            params["response_format"] = {"type": "json_object"}
        reply = await self.eval_client.chat(messages, info, **params)
        verdict = parse_verdict(reply.content, result.attempt, self.opts.min_confidence)
        verdict.request_id = reply.record.request_id
        self.trace.add_model_turn(
            reply.record, reply.content, model_name=self.eval_client.settings.model,
            extra={"role": "evaluator", "verdict": verdict.model_dump(mode="json")},
        )
        return verdict

    async def _close_sessions(self) -> None:
        """Once, at the trial's end: end its session on every endpoint that served a call of
        it, so a session-affinity binding ends with the trial, not at its time-out."""
        served = {r.role for r in self.log.measured()}
        evaluator_apart = self.eval_client is not self.client
        clients = []
        if served - {EVALUATOR_ROLE} or (served and not evaluator_apart):
            clients.append(self.client)
        if EVALUATOR_ROLE in served and evaluator_apart:
            clients.append(self.eval_client)
        for client in clients:
            await client.close_session(CallInfo(
                self.ident.trial_name, self.ident.scenario_id, self.outcome.status.attempts or 1,
                0, SESSION_CLOSE_ROLE, self.ident.session_id,
                request_index=self.log.next_request_index()))

    def _publish(self) -> None:
        """Metadata, status file and trajectory as they stand now (a timeout keeps them)."""
        status = self.outcome.status
        self.context.metadata = {
            **(self.context.metadata or {}),
            "status": status.status,
            "status_reason": status.reason,
            "attempts": status.attempts,
            "accepted_attempt": status.accepted_attempt,
            "verdicts": [v.model_dump(mode="json") for v in self.outcome.verdicts],
            "tool_calls_per_attempt": [len(a.calls) for a in self.outcome.attempts],
            **self._conversation_metadata(),
            "llm_calls": len(self.log.measured()),
            "tool_mode": self.opts.tool_mode,
            "self_eval": self.opts.self_eval,
        }
        write_status(self.logs_dir, status)
        self.trace.write(self.logs_dir, self.log.measured())

    def _conversation_metadata(self) -> dict[str, Any]:
        attempts = [a for a in self.outcome.attempts if a.transcript]
        if not attempts:
            return {}
        return {"turns_per_attempt": [a.turns for a in attempts],
                "end_reason_per_attempt": [a.end_reason for a in attempts]}

