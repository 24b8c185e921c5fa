"""Acceptance of conversation mode: the real `harbor` CLI runs BankingAgent on a sample task
built with `--mode conversation`, in LocalEnvironment (whose bank service plays the customer),
against the real Dynamo frontend + mocker whose replay trace scripts the model's outputs
(scripts.CONVERSATION_E2E_TURNS, scripts.CONVERSATION_LLM)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from harbor.models.trajectories.trajectory import Trajectory

from agents.conversation import CONVERSATION_INTRO
from contracts.conversation import CUSTOMER_FILE, ConversationEntry, CustomerBrief
from contracts.llm_calls import LLMCallRecord
from contracts.tsq import TsqDetails
from tests.agents import scripts
from tests.support.built_tasks import build_sample
from tests.support.harbor_run import agent_calls, read_jsonl, run_job, token_count, trials

pytestmark = [pytest.mark.dynamo, pytest.mark.harbor]


def _build(out: Path, scenarios: list[str], max_turns: int) -> Path:
    return build_sample(out, scenarios=scenarios, mode="conversation", max_turns=max_turns)


@pytest.fixture(scope="module")
def conversation_tasks(tmp_path_factory) -> Path:
    return _build(tmp_path_factory.mktemp("conv-tasks"), ["banking-000"], max_turns=10)


@pytest.fixture(scope="module")
def conversation_trial(scripted_stack, conversation_tasks, tmp_path_factory) -> Path:
    job = run_job(conversation_tasks, scripted_stack, tmp_path_factory.mktemp("conv-jobs"),
                  "conv", ["banking-000"], scripts.PREFIX_CONVERSATION_E2E, [], "sk-conv-e2e")
    return trials(job)["banking-000"]


def _records(trial: Path) -> list[LLMCallRecord]:
    return [LLMCallRecord.model_validate(r) for r in agent_calls(trial)]


def test_the_customer_reveals_one_goal_per_turn(conversation_trial):
    entries = [ConversationEntry.model_validate(e)
               for e in read_jsonl(conversation_trial / "agent/conversation.jsonl")]
    customer = [e for e in entries if e.speaker == "customer" and e.turn > 0]
    turns = scripts.CONVERSATION_E2E_TURNS
    assert [e.turn for e in customer] == list(range(1, len(turns) + 1))
    revealed = [e.goal_index for e in customer if e.model_extra.get("kind") == "goal"]
    assert revealed == [0, 1, 2, 3]
    assert customer[-1].ended and customer[-1].end_reason == "satisfied"
    # What the agent said is what its model answered at the end of each turn.
    said = [e.text for e in entries if e.speaker == "agent"]
    assert said == [turn[-1] for turn in turns]
    status = json.loads((conversation_trial / "agent/agent_status.json").read_text())
    assert status["status"] == "ok", status


def test_tool_calls_land_in_the_intents_log_with_their_turn(conversation_trial):
    intents = [i for i in read_jsonl(conversation_trial / "agent/intents.jsonl") if "tool" in i]
    expected = [(name, t) for t, outputs in enumerate(scripts.CONVERSATION_E2E_TURNS)
                for name in scripts.scripted_calls(outputs)]
    assert [(i["tool"], i["turn"]) for i in intents] == expected
    assert {i["attempt"] for i in intents} == {1}


def test_the_verifier_scores_each_goal(conversation_trial):
    reward = json.loads((conversation_trial / "verifier/reward.json").read_text())
    details = TsqDetails.model_validate_json(
        (conversation_trial / "verifier/tsq.json").read_text())
    called = {name for outputs in scripts.CONVERSATION_E2E_TURNS
              for name in scripts.scripted_calls(outputs)}
    assert [g.index for g in details.goals] == [0, 1, 2, 3]
    for goal in details.goals:
        implied = "served" if set(goal.tools or []) & called else "missed"
        assert goal.status == implied, goal
    assert reward["turns"] == len(scripts.CONVERSATION_E2E_TURNS)


def test_each_prompt_carries_the_conversation_so_far(conversation_trial, conversation_tasks):
    records = _records(conversation_trial)
    turns = scripts.CONVERSATION_E2E_TURNS
    assert [r.turn for r in records] == [t for t, outputs in enumerate(turns) for _ in outputs]
    assert {r.session_id for r in records} == {conversation_trial.name}
    assert all(r.role == "agent" and r.error is None for r in records)
    prompts = [r.prompt_tokens for r in records]
    assert prompts == sorted(set(prompts)), prompts  # one history, growing every request
    steps = Trajectory.model_validate_json(
        (conversation_trial / "agent/trajectory.json").read_text()).steps
    customer = {s.extra["turn"]: s.message for s in steps if s.source == "user"}
    assert sorted(customer) == list(range(len(turns) + 1))
    # The model saw the customer's first message alone: no name, no protocol paragraph.
    brief = CustomerBrief.model_validate_json(
        (conversation_tasks / "banking-000/environment" / CUSTOMER_FILE).read_text())
    assert steps[0].message == CONVERSATION_INTRO
    assert customer[0] == brief.first_message.strip()
    # The first request of turn t holds the previous request's prompt, its answer and the
    # customer's turn-t message: the prompt grows by at least that message.
    for before, first in zip(records, records[1:], strict=False):
        if first.turn != before.turn:
            grown = first.prompt_tokens - before.prompt_tokens
            assert grown >= token_count(customer[first.turn]), (first.turn, grown)


def test_llm_customer_calls_are_logged_as_user_simulator(scripted_stack, tmp_path):
    tasks = _build(tmp_path / "tasks", ["banking-002"], max_turns=2)
    key = "sk-sim-" + os.urandom(8).hex()
    (tmp_path / "jobs").mkdir()
    job = run_job(tasks, scripted_stack, tmp_path / "jobs", "conv-llm", ["banking-002"],
                  scripts.PREFIX_CONVERSATION_LLM,
                  ["user_simulator=llm", f"user_base_url={scripted_stack.base_url}",
                   f"user_model={scripted_stack.model}", "user_api_key_env=SIM_E2E_KEY"],
                  "sk-agent-e2e", extra_env={"SIM_E2E_KEY": key})
    trial = trials(job)["banking-002"]
    records = _records(trial)
    simulated = [r for r in records if r.role == "user_simulator"]
    assert [(r.attempt, r.turn) for r in simulated] == [(1, 1), (1, 2)]
    assert {r.trial_name for r in simulated} == {trial.name}
    assert all(r.http_status == 200 and r.model == scripted_stack.model and r.prompt_tokens
               for r in simulated)
    agent = [r for r in records if r.role == "agent"]
    assert [r.turn for r in agent] == [0, 1]
    status = json.loads((trial / "agent/agent_status.json").read_text())
    assert status["status"] == "ok" and status["llm_calls"] == len(agent), status
    leaks = [p for p in job.rglob("*") if p.is_file() and key.encode() in p.read_bytes()]
    assert leaks == []
