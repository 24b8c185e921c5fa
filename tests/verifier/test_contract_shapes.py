"""What the bank and the verifier write matches the host-side contract models."""

from __future__ import annotations

import json

from verifier_harness import EXPECTED_FIXTURE, Trial

from contracts.expected import Expected
from contracts.intents import Acceptance, Intent
from contracts.reward import REWARD_KEYS, Reward


def test_fixture_expected_json_has_the_task_builders_shape() -> None:
    Expected.model_validate_json(EXPECTED_FIXTURE.read_text())


def test_bank_lines_and_reward_validate_against_the_contracts(trial: Trial) -> None:
    for argv in [
        ("call", "get_account_balance", '{"account_number": "1", "account_type": "savings"}'),
        ("call", "get_account_balance", "{oops"),
        ("call", "nope", "[1]"),
        ("call", "transfer_funds", json.dumps({"tags": ["x" * 20_000]})),
        ("accept", "1"),
    ]:
        trial.bank(*argv)
    lines = trial.intents.read_text().splitlines()
    intents = [Intent.model_validate_json(line) for line in lines[:-1]]
    assert [i.valid for i in intents] == [True, False, False, False]
    assert Acceptance.model_validate_json(lines[-1]).accept == 1

    reward = trial.verify().reward
    assert tuple(reward) == REWARD_KEYS
    Reward.model_validate(reward)
