"""Conversation mode of BankingAgent: real Dynamo frontend + mocker (outputs scripted in
scripts.CONVERSATION), the task environment played by a stand-in whose `bank say` follows
contracts.conversation. The real environment's customer is exercised end to end in
test_conversation_e2e.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from harbor.models.agent.context import AgentContext
from harbor.models.trajectories.trajectory import Trajectory

from agents import text_protocol
from agents.attempt import BankCall
from agents.banking import BankingAgent
from agents.conversation import CONVERSATION_INTRO, customer_env, first_message, is_conversation
from agents.options import parse_options
from agents.react import EMPTY_SAY_NUDGE
from agents.self_eval import evaluator_messages
from contracts.conversation import CUSTOMER_ENV, EXIT_CUSTOMER_MODEL_FAILED, EXIT_USAGE
from contracts.llm_calls import SESSION_CLOSE_ROLE, LLMCallRecord
from tests.agents import scripts
from tests.agents.conversation_standin import (
    ConversationBankStandIn,
    SayFailure,
    conversation_instruction,
)

FIRST = "Hi, I'd like to check my checking balance, account 12345678."


async def _run(stack, tmp_path: Path, scenario: str, env: ConversationBankStandIn,
               **options) -> tuple[Path, AgentContext]:
    logs = tmp_path / f"{scenario}__conv" / "agent"
    logs.mkdir(parents=True)
    agent = BankingAgent(
        logs_dir=logs, model_name=f"openai/{stack.model}", base_url=stack.base_url,
        nvext_annotations=f"output_replay_id:{scripts.PREFIX_CONVERSATION}"
                          "{scenario_id}:{request_index}", **options)
    context = AgentContext()
    await agent.run(conversation_instruction(FIRST), env, context)
    return logs, context


def _records(logs: Path) -> list[LLMCallRecord]:
    """The calls of the agent, evaluator and customer (not the session's closing request)."""
    records = [LLMCallRecord.model_validate_json(line)
               for line in (logs / "llm_calls.jsonl").read_text().splitlines()]
    return [r for r in records if r.role != SESSION_CLOSE_ROLE]


def _status(logs: Path) -> dict:
    return json.loads((logs / "agent_status.json").read_text())


# ---- pure parts ---------------------------------------------------------------------------


def test_the_model_gets_the_first_message_alone():
    instruction = conversation_instruction("Line one.\n\nLine two --- with a dash.")
    assert is_conversation(instruction)
    assert first_message(instruction) == "Line one.\n\nLine two --- with a dash."
    assert not is_conversation("Customer: X\n\nHi\n\n---\n\nYou are the bank's agent.")


def test_llm_customer_needs_an_endpoint_and_gets_its_key_from_the_environment(monkeypatch):
    with pytest.raises(ValueError, match="user_simulator=llm needs --ak user_base_url=…"):
        parse_options({"user_simulator": "llm", "user_model": "m"})
    with pytest.raises(ValueError, match="user_simulator"):
        parse_options({"user_simulator": "human"})
    assert customer_env(parse_options({})) is None  # scripted: nothing to pass
    monkeypatch.setenv("SIM_KEY", "sk-sim-123")
    opts = parse_options({"user_simulator": "llm", "user_base_url": "http://h:1/v1",
                          "user_model": "sim", "user_api_key_env": "SIM_KEY"})
    assert customer_env(opts) == dict(zip(CUSTOMER_ENV, ("llm", "http://h:1/v1", "sim",
                                                         "sk-sim-123"), strict=True))
    assert "sk-sim-123" not in json.dumps(opts.model_dump(mode="json"))


def test_the_judge_reads_the_whole_conversation():
    transcript = [("customer", "Freeze my card."), ("agent", "Which card?"),
                  ("customer", "The one ending 4821.")]
    calls = [BankCall("freeze_card", '{"card_last4": "4821"}', True, turn=1)]
    system, user = evaluator_messages("ignored", [], calls, "Which card?", transcript)
    assert "conversation" in system["content"]
    assert "Customer: Freeze my card.\nAgent: Which card?\nCustomer: The one ending 4821." \
        in user["content"]
    assert "[turn 1] freeze_card" in user["content"] and "ignored" not in user["content"]


# ---- against the mocker ---------------------------------------------------------------------

@pytest.mark.dynamo
async def test_one_conversation_turn_by_turn(scripted_stack, tmp_path):
    lines = ["Thanks. Also move 800 dollars from 87654321 to my checking.", "Great, bye!"]
    env = ConversationBankStandIn(lines)
    logs, context = await _run(scripted_stack, tmp_path, "banking-000", env)
    script = scripts.CONVERSATION["banking-000"]

    assert _status(logs)["status"] == "ok"
    assert env.calls == [(1, 0, "get_account_balance"), (1, 1, "transfer_funds")]
    assert [(a, text) for a, text, _ in env.says] == [(1, script[1]), (1, script[3])]
    assert all(e is None for _, _, e in env.says)  # scripted customer: no customer env
    records = _records(logs)
    assert [(r.turn, r.step, r.role) for r in records] == [
        (0, 1, "agent"), (0, 2, "agent"), (1, 3, "agent"), (1, 4, "agent")]
    assert {r.session_id for r in records} == {"banking-000__conv"}
    prompts = [r.prompt_tokens for r in records]
    assert prompts == sorted(set(prompts)), prompts  # one history, growing every request

    steps = Trajectory.model_validate_json((logs / "trajectory.json").read_text()).steps
    assert steps[0].message == CONVERSATION_INTRO
    assert steps[1].source == "user" and steps[1].message == FIRST  # no name, no protocol
    users = [(s.message, s.extra["turn"]) for s in steps if s.source == "user"]
    assert users == [(FIRST, 0), (lines[0], 1), (lines[1], 2)]
    assert [s.extra["turn"] for s in steps if s.source == "agent"] == [0, 0, 1, 1]
    assert context.metadata["turns_per_attempt"] == [2]
    assert context.metadata["end_reason_per_attempt"] == ["satisfied"]


@pytest.mark.dynamo
async def test_a_rejected_conversation_starts_again_with_the_feedback(scripted_stack, tmp_path):
    env = ConversationBankStandIn(["My card ending 4821, I lost it. That's all."])
    logs, context = await _run(scripted_stack, tmp_path, "banking-001", env,
                               self_eval="true", max_retries="1")
    script = scripts.CONVERSATION["banking-001"]

    assert [(a, text) for a, text, _ in env.says] == [(1, script[0]), (2, script[3])]
    assert env.calls == [(2, 0, "freeze_card")]
    records = _records(logs)
    assert [(r.attempt, r.turn, r.role) for r in records] == [
        (1, 0, "agent"), (1, 1, "evaluator"), (2, 0, "agent"), (2, 0, "agent"),
        (2, 1, "evaluator")]  # the judge comes after the attempt's last customer turn
    assert _status(logs)["accepted_attempt"] == 2
    steps = Trajectory.model_validate_json((logs / "trajectory.json").read_text()).steps
    systems = [s.message for s in steps if s.source == "system"]
    assert systems[0] == CONVERSATION_INTRO
    assert systems[1].startswith(CONVERSATION_INTRO) and "freeze_card" in systems[1]
    firsts = [s.message for s in steps if s.source == "user" and s.extra["turn"] == 0]
    assert firsts == [FIRST, FIRST]  # a fresh conversation from the first message
    assert context.metadata["turns_per_attempt"] == [1, 1]


def _endpoint_failed(status: int, error: dict | None = None, stderr: str = "") -> SayFailure:
    """`bank say` exiting 75 with the llm customer's failed request, as the bank prints it."""
    call = {"request_id": "sim-x", "model": "sim", "start_unix_ns": 1, "http_status": status,
            **({"error": error} if error else {})}
    return SayFailure(EXIT_CUSTOMER_MODEL_FAILED, stderr=stderr or f"customer model: HTTP {status}",
                      stdout=json.dumps({"error": f"HTTP {status}", "simulator_calls": [call]}))


@pytest.mark.dynamo
@pytest.mark.parametrize("failure, status, words", [
    (SayFailure(1, stderr="bank: no customer.json"), "harness_error", "exited 1"),
    (_endpoint_failed(503), "infra_error", "HTTP 503"),
    (SayFailure(0, stdout='{"turn": 1}'), "harness_error", "printed no valid reply"),
    # The agent's own words: refused by the bank, rejected by the customer's endpoint, or
    # leaving the customer's model nothing to say.
    (SayFailure(EXIT_USAGE, stderr="bank: say needs a non-empty message"), "agent_error",
     "refused the message"),
    (_endpoint_failed(400, {"type": "http_400", "message": "too long"}), "agent_error",
     "HTTP 400"),
    (_endpoint_failed(200, {"type": "bad_response", "message": "no content"},
                      stderr="no message content"), "agent_error", "no message content"),
])
async def test_a_failed_say_is_charged_to_whoever_failed(scripted_stack, tmp_path, failure,
                                                         status, words):
    env = ConversationBankStandIn(["unused"], fail_say=failure)
    logs, context = await _run(scripted_stack, tmp_path, "banking-002", env)
    written = _status(logs)
    assert written["status"] == status and words in written["reason"], written
    assert "customer unavailable" in written["reason"]
    assert context.metadata["status"] == status
    simulated = [(r.request_id, r.turn, r.http_status) for r in _records(logs)
                 if r.role == "user_simulator"]
    # The llm customer's failed request is kept, stamped with the turn it was for.
    endpoint = failure.code == EXIT_CUSTOMER_MODEL_FAILED
    assert [r[0] for r in simulated] == (["sim-x"] if endpoint else [])


@pytest.mark.dynamo
async def test_llm_customer_calls_are_logged_apart(scripted_stack, tmp_path, monkeypatch):
    key = "sk-sim-" + "7" * 16
    monkeypatch.setenv("SIM_KEY", key)
    simulated = {"request_id": "sim-1", "model": "sim-model", "start_unix_ns": 1,
                 "send_ns": 10, "read_ns": [20, 30], "end_ns": 40, "prompt_tokens": 500,
                 "completion_tokens": 12, "http_status": 200}
    env = ConversationBankStandIn(["Thanks, that's all."], simulator_calls=[simulated])
    logs, context = await _run(scripted_stack, tmp_path, "banking-002", env,
                               user_simulator="llm", user_base_url="http://sim:9/v1",
                               user_model="sim-model", user_api_key_env="SIM_KEY")
    (_, _, said_env), = env.says
    assert said_env == dict(zip(CUSTOMER_ENV, ("llm", "http://sim:9/v1", "sim-model", key),
                                strict=True))
    records = _records(logs)
    sim = [r for r in records if r.role == "user_simulator"]
    assert [(r.request_id, r.trial_name, r.scenario_id, r.attempt, r.turn) for r in sim] == [
        ("sim-1", "banking-002__conv", "banking-002", 1, 1)]
    agent = [r for r in records if r.role == "agent"]
    # The customer's tokens are not the agent's.
    assert context.n_input_tokens == sum(r.prompt_tokens for r in agent)
    assert _status(logs)["llm_calls"] == len(agent)
    leaks = [p.name for p in logs.rglob("*") if p.is_file() and key in p.read_text()]
    assert leaks == []
    options = json.loads((logs / "trajectory.json").read_text())["agent"]["extra"]["options"]
    assert options["user_api_key_env"] == "SIM_KEY"


@pytest.mark.dynamo
async def test_text_mode_speaks_its_final_answer(scripted_stack, tmp_path):
    env = ConversationBankStandIn(["Good, bye."])
    logs, _ = await _run(scripted_stack, tmp_path, "banking-003", env, tool_mode="text")
    assert env.calls == [(1, 0, "get_account_balance")]
    assert [text for _, text, _ in env.says] == ["Your checking balance is fine."]
    steps = Trajectory.model_validate_json((logs / "trajectory.json").read_text()).steps
    assert steps[0].message.startswith(CONVERSATION_INTRO)
    assert f"Final Answer: {text_protocol.SPEAK_RULE[2]}" in steps[0].message
    nudged = [s for s in steps if s.observation and any(
        r.content == EMPTY_SAY_NUDGE for r in s.observation.results)]
    assert len(nudged) == 1 and nudged[0].extra["react_step"] == 2
    assert _status(logs)["status"] == "ok"
