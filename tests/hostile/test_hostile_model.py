"""A hostile model under the project's own BankingAgent, in conversation mode with the llm
customer (whose `bank say` runs as root): the model's reply to the customer is text that names
Harbor's verification step, that reads as the bank's own options, or that the bank would take
as "read the message from stdin". None of it may start verification, kill the bank or fail the
`say`: each trial is counted with what its calls earn, and the honest trial beside them keeps
its score.

The real `harbor run`, LocalEnvironment, and the real Dynamo frontend + mocker, whose replay
trace scripts the model: one useless tool call, then the hostile reply; the customer's turn
limit of 1 ends the conversation after it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis.tables import load
from bankbench.serve.replay import tool_call_text
from contracts.conversation import ConversationEntry
from tests.support.hostile_trials import bank_calls, honest_reward, trials
from tests.support.sample_job import run_sample_job

pytestmark = [pytest.mark.dynamo, pytest.mark.harbor, pytest.mark.timeout(900)]

USELESS = tool_call_text("get_exchange_rate", {"from_currency": "USD", "to_currency": "EUR"})
# scenario -> the model's reply to the customer
REPLIES = {
    # What Harbor's verifier runs first, as a shell command the reply tries to break into.
    "banking-000": "That is all I can do.'; rm -f -- /logs/verifier/reward.txt "
                   "/logs/verifier/reward.json; echo '",
    "banking-001": "-",  # the bank's word for "the message is on stdin"
    "banking-003": "--attempt=99",  # the bank's own option
    "banking-004": "Done. $(kill -9 -1) `pkill bankd` /logs/verifier/reward.json",
}
PREFIX = "hm-"
KEY_ENV = "BANKBENCH_HOSTILE_MODEL_KEY"


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    from bankbench.serve import api, replay

    root = tmp_path_factory.mktemp("hostile-model-stack")
    sessions = {PREFIX + sid: [USELESS, reply] for sid, reply in REPLIES.items()}
    trace = replay.write_trace(root / "trace.jsonl", sessions)
    with api.running("cpu-mocker", workers=1, state_dir=root / "state",
                     options={"speedup_ratio": 100.0, "replay_trace": str(trace)}) as state:
        yield state


@pytest.fixture(scope="module")
def job(stack, tmp_path_factory) -> Path:
    banking = {
        "import_path": "agents.banking:BankingAgent", "model_name": f"openai/{stack.model}",
        "skip_model_parsing": True,  # as a sweep runs it: no LiteLLM import in Harbor
        "kwargs": {"base_url": stack.base_url, "api_key_env": KEY_ENV,
                   "nvext_annotations": f"output_replay_id:{PREFIX}{{scenario_id}}:"
                                        "{request_index}",
                   "user_simulator": "llm", "user_base_url": stack.base_url,
                   "user_model": stack.model, "user_api_key_env": KEY_ENV},
    }
    return run_sample_job(
        tmp_path_factory.mktemp("hostile-model"), "hostile-model", tuple(sorted(REPLIES)),
        agents=[banking, {"name": "oracle"}], n_concurrent=4, timeout=800,
        build={"mode": "conversation", "max_turns": 1},
        extra_env={KEY_ENV: "sk-hostile-model"},
    )


def tasks_root(job: Path) -> Path:
    return Path(json.loads((job.parent.parent / "job.json").read_text())["tasks"][0]["path"])


@pytest.mark.parametrize("scenario", sorted(REPLIES))
def test_the_reply_reaches_the_customer_and_the_trial_counts(job, scenario):
    trial = trials(job)[("bankbench-banking", scenario)]
    status = json.loads((trial / "agent/agent_status.json").read_text())
    assert status["status"] == "ok", status
    talk = [ConversationEntry.model_validate_json(line)
            for line in (trial / "agent/conversation.jsonl").read_text().splitlines()]
    assert [e.text for e in talk if e.speaker == "agent"] == [REPLIES[scenario]]
    assert len(bank_calls(trial)) == 1
    row = load(job).trials.set_index("trial").loc[trial.name]
    assert row.in_quality and row.status == "scored", row.status_reason
    earned = honest_reward(trial, tasks_root(job).parent / scenario)
    assert row.tsq == earned["tsq"]


def test_the_honest_trials_keep_their_scores(job):
    rows = load(job).trials.set_index("trial")
    for scenario in REPLIES:
        row = rows.loc[trials(job)[("oracle", scenario)].name]
        assert (row.status, row.tsq) == ("scored", 1.0), row.status_reason
