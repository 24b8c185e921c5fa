"""Hostile model output: every shape of nonsense a model can send is bounded and recorded, and
the trial still ends and is scored.

The real `harbor` CLI runs BankingAgent on sample tasks in LocalEnvironment against the real
Dynamo frontend + mocker, whose replay trace scripts one hostile behaviour per scenario. Two
jobs (native tool calls and text mode) run side by side to keep the wall time small.

What the serving side lets through: tool calls reach the agent only as the frontend's hermes
parser makes them from `<tool_call>{…}</tool_call>` text. A block whose JSON does not parse
(arguments that are not JSON at all) or that names no tool is dropped by the parser, so the
agent sees an empty reply; arguments that are a JSON array or string do reach it.
"""

from __future__ import annotations

import json
import math
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from harbor.models.trajectories.trajectory import Trajectory
from harbor.models.trial.result import TrialResult

from bankbench.serve.replay import tool_call_text as tc
from contracts.llm_calls import LLMCallRecord
from tests.support.built_tasks import build_sample
from tests.support.harbor_run import agent_calls, read_jsonl, run_job, trials

pytestmark = [pytest.mark.dynamo, pytest.mark.harbor]

MAX_STEPS, MAX_CALLS, MAX_ARG = 4, 4, 8000
BOUNDS = [f"max_steps={MAX_STEPS}", f"max_calls_per_step={MAX_CALLS}",
          f"max_argument_chars={MAX_ARG}"]
RATE = tc("get_exchange_rate", {"from_currency": "USD", "to_currency": "EUR"})
DONE = "All done."
NOT_RUN = f"not run: at most {MAX_CALLS} tool calls per turn"
NOT_SENT = f"arguments longer than {MAX_ARG} characters; not sent"
SHELLY_NAME = "x; touch /app/pwned #"  # must reach the bank as one word, never as shell
# More turns than max_steps: past its last turn a replay session would answer random text.
FOREVER = MAX_STEPS + 2

# Scenario -> (behaviour, scripted outputs). `-` packs 64 characters into one token, so the
# 200 kB argument costs the mocker ~3k tokens, not ~50k.
NATIVE: dict[str, tuple[str, list[str]]] = {
    "banking-000": ("300 tool calls in one reply", [
        "".join('<tool_call>{"name":"get_exchange_rate"}</tool_call>' for _ in range(300)),
        DONE]),
    "banking-001": ("200 kB of arguments", [
        tc("freeze_card", {"card_last4": "4821", "reason": "-" * 200_000}), DONE]),
    "banking-002": ("arguments a JSON array / string, then not JSON at all", [
        '<tool_call>{"name": "freeze_card", "arguments": [4821, "lost"]}</tool_call>\n'
        '<tool_call>{"name": "freeze_card", "arguments": "card 4821, lost"}</tool_call>',
        '<tool_call>{"name": "freeze_card", "arguments": {card_last4: 4821}}</tool_call>',
        DONE]),
    "banking-003": ("unknown tool names", [
        tc("launch_rocket", {"target": "moon"}) + "\n" + tc(SHELLY_NAME, {})
        + '\n<tool_call>{"arguments": {}}</tool_call>',
        DONE]),
    "banking-004": ("a tool call every turn, forever", [RATE] * FOREVER),
    "banking-005": ("empty replies, forever", ["\n\n", "<tool_call>\n</tool_call>", " "]
                    + ["\n"] * (FOREVER - 3)),
}
TEXT: dict[str, tuple[str, list[str]]] = {
    "banking-006": ("garbage, then a final answer", [
        "\x00\ufffd}{<<>>\x1b[31m ]]]]]]",
        "<tool_call> {{{{ not json",
        "Action:\nAction Input: {}",
        "Thought: done\nFinal Answer: " + DONE]),
    "banking-007": ("thinking forever", ["Thought: I should think about this more."] * FOREVER),
}
PREFIX_NATIVE, PREFIX_TEXT = "hn-", "ht-"
ENDLESS = {"banking-004", "banking-005", "banking-007"}


def requests_made(turns: list[str], text_mode: bool) -> int:
    """How many requests the agent makes for a script: up to the final answer or max_steps."""
    for i, turn in enumerate(turns[:MAX_STEPS]):
        final = "Final Answer:" in turn if text_mode else turn == DONE
        if final:
            return i + 1
    return MAX_STEPS


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory):
    from bankbench.serve import api, replay

    root = tmp_path_factory.mktemp("hostile-stack")
    sessions = {PREFIX_NATIVE + sid: turns for sid, (_, turns) in NATIVE.items()}
    sessions |= {PREFIX_TEXT + sid: turns for sid, (_, turns) in TEXT.items()}
    trace = replay.write_trace(root / "trace.jsonl", sessions)
    # At speedup 1 the mocker paces ~6 ms a token here; a large ratio
    # makes the ~7k scripted tokens of the big replies stream in well under a second.
    with api.running("cpu-mocker", workers=1, state_dir=root / "state",
                     options={"speedup_ratio": 1000.0, "replay_trace": str(trace)}) as state:
        yield state


@pytest.fixture(scope="module")
def tasks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("hostile-tasks")
    return build_sample(out, scenarios=sorted(NATIVE | TEXT))


@pytest.fixture(scope="module")
def jobs(tasks, stack, tmp_path_factory) -> dict[str, Path]:
    """Both jobs at once, one trial per scenario; returns scenario -> trial directory."""
    out = tmp_path_factory.mktemp("hostile-jobs")
    key = "sk-hostile-test"
    with ThreadPoolExecutor(2) as pool:
        native = pool.submit(run_job, tasks, stack, out, "native", sorted(NATIVE),
                             PREFIX_NATIVE, BOUNDS, key)
        text = pool.submit(run_job, tasks, stack, out, "text", sorted(TEXT), PREFIX_TEXT,
                           [*BOUNDS, "tool_mode=text"], key)
        found = trials(native.result()) | trials(text.result())
    assert sorted(found) == sorted(NATIVE | TEXT)
    return found


def _trajectory(trial: Path) -> Trajectory:
    return Trajectory.model_validate_json((trial / "agent/trajectory.json").read_text())


def _turns(trial: Path) -> list:
    """The agent's model turns in the trajectory (system/user steps left out)."""
    return [s for s in _trajectory(trial).steps if s.source == "agent"]


def _observations(step) -> list[str]:
    return [r.content for r in (step.observation.results if step.observation else [])]


def _from_bank(observation: str) -> bool:
    """Whether an observation is the bank's reply (the agent's own notes are plain text or
    `{"error": …}` alone; the bank's errors carry the call's `seq`)."""
    try:
        value = json.loads(observation)
    except json.JSONDecodeError:
        return False
    return not (isinstance(value, dict) and set(value) == {"error"})


def _bank_intents(trial: Path) -> list[dict]:
    path = trial / "agent/intents.jsonl"
    return [i for i in read_jsonl(path) if "tool" in i] if path.exists() else []


@pytest.mark.parametrize("scenario", sorted(NATIVE | TEXT))
def test_every_trial_ends_scored_and_bounded(jobs, scenario):
    trial = jobs[scenario]
    text_mode = scenario in TEXT
    behaviour, turns = (TEXT if text_mode else NATIVE)[scenario]

    result = TrialResult.model_validate_json((trial / "result.json").read_text())
    assert result.exception_info is None, result.exception_info
    reward = json.loads((trial / "verifier/reward.json").read_text())
    assert isinstance(reward["tsq"], int | float) and math.isfinite(reward["tsq"])

    status = json.loads((trial / "agent/agent_status.json").read_text())
    if scenario in ENDLESS:
        assert status["status"] == "agent_error"
        assert f"max_steps={MAX_STEPS}" in status["reason"]
    else:
        assert status["status"] == "ok", (behaviour, status)

    # One record per request, all answered; never more turns than max_steps.
    records = [LLMCallRecord.model_validate(r) for r in agent_calls(trial)]
    expected = requests_made(turns, text_mode)
    assert len(records) == expected == status["llm_calls"]
    assert [r.step for r in records] == list(range(1, expected + 1))
    assert all(r.error is None and r.http_status == 200 for r in records)

    # Each turn sends at most max_calls_per_step calls to the bank, and every call the bank
    # recorded is one the trajectory shows as run.
    model_turns = _turns(trial)
    assert len(model_turns) == expected
    sent = [sum(_from_bank(o) for o in _observations(step)) for step in model_turns]
    assert max(sent) <= MAX_CALLS
    assert sum(sent) == len(_bank_intents(trial))


def test_hundreds_of_calls_run_only_max_calls_per_step(jobs):
    trial = jobs["banking-000"]
    first = _turns(trial)[0]
    assert len(first.tool_calls) == 300  # all recorded in the trajectory ...
    observations = _observations(first)
    assert sum(NOT_RUN in o for o in observations) == 300 - MAX_CALLS  # ... the rest refused
    assert [i["tool"] for i in _bank_intents(trial)] == ["get_exchange_rate"] * MAX_CALLS
    # The refused calls stay out of the next request (echoed, they took it from ~5k prompt
    # tokens to ~23k, past the context of the small models this runs against).
    assert _prompt_growth(trial) < 1500


def _prompt_growth(trial: Path) -> int:
    first, second = read_jsonl(trial / "agent/llm_calls.jsonl")[:2]
    return second["prompt_tokens"] - first["prompt_tokens"]


def test_huge_arguments_are_refused_before_the_bank(jobs):
    trial = jobs["banking-001"]
    first = _turns(trial)[0]
    assert len(first.tool_calls) == 1
    assert len(first.tool_calls[0].arguments["reason"]) == 200_000  # kept for the record
    assert _observations(first) == [json.dumps({"error": NOT_SENT})]
    assert _bank_intents(trial) == []
    # The refused text is not sent back to the server on the next turn (it was ~3k tokens of
    # dashes here; 200 kB of ordinary text would be ~50k, past any small model's context).
    assert _prompt_growth(trial) < 500


def test_arguments_that_are_not_an_object_reach_the_bank_as_invalid(jobs):
    trial = jobs["banking-002"]
    intents = _bank_intents(trial)
    assert [i["tool"] for i in intents] == ["freeze_card", "freeze_card"]
    assert intents[0]["arguments"] == [4821, "lost"]
    assert intents[1]["arguments"] == "card 4821, lost"
    assert not any(i["valid"] for i in intents)
    # The block whose arguments are not JSON is dropped by the server's parser: an empty reply,
    # answered with a nudge.
    second = _turns(trial)[1]
    assert not second.tool_calls and "empty" in _observations(second)[0]


def test_unknown_tools_are_refused_by_the_bank(jobs):
    trial = jobs["banking-003"]
    intents = _bank_intents(trial)
    assert [i["tool"] for i in intents] == ["launch_rocket", SHELLY_NAME]
    assert not any(i["valid"] for i in intents)
    assert all("unknown tool" in " ".join(i["errors"]).lower() for i in intents)


def test_text_mode_garbage_gets_a_format_error(jobs):
    trial = jobs["banking-006"]
    garbage = _turns(trial)[:3]
    assert all(not step.tool_calls for step in garbage)
    assert all("error" in json.loads(_observations(step)[0]) for step in garbage)
    assert _bank_intents(trial) == []
