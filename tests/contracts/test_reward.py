"""reward.json through its one contract: a reader takes each number the contract's field
accepts, names the ones it refuses, and keeps a foreign task's own metrics."""

from __future__ import annotations

import json
import math

from analysis.files import read_reward_file, read_trial_result
from contracts.reward import COUNT_KEYS, REWARD_KEYS, SCORE_KEYS, Reward, reward_numbers


def test_scores_are_shares_and_counts_are_the_rest():
    assert set(SCORE_KEYS) | set(COUNT_KEYS) == set(REWARD_KEYS) == set(Reward.model_fields)
    assert COUNT_KEYS == ("n_goals_servable", "n_goals_no_tool", "turns")
    perfect = dict.fromkeys(REWARD_KEYS, 1.0) | {"n_goals_servable": 4.0}
    assert Reward.model_validate(perfect).n_goals_servable == 4.0


def test_a_value_its_field_refuses_is_left_out_and_named():
    numbers, refused = reward_numbers({
        "tsq": 1, "precision": 1.5, "recall": math.nan, "goal_score": -0.1, "turns": 3,
        "n_goals_no_tool": -1, "solved": "yes", "reward": 7, "note": "text",
        "huge": 10**400, "endless": math.inf})
    assert numbers == {"tsq": 1.0, "turns": 3.0, "reward": 7.0}
    assert refused == ["precision", "recall", "goal_score", "n_goals_no_tool", "solved",
                       "huge", "endless"]


def _trial(tmp_path, rewards: dict) -> tuple:
    trial = tmp_path / "banking-000__abc"
    (trial / "verifier").mkdir(parents=True)
    (trial / "verifier" / "reward.json").write_text(json.dumps(rewards))
    (trial / "result.json").write_text(json.dumps({
        "trial_name": trial.name, "task_name": "banking-000",
        "verifier_result": {"rewards": rewards}}))
    return trial


def test_the_file_and_harbors_copy_are_read_alike(tmp_path):
    trial = _trial(tmp_path, {"tsq": 0.5, "precision": 2.0, "turns": 1})
    issues: list = []
    from_file = read_reward_file(trial, issues)
    result = read_trial_result(trial, issues)
    assert from_file == result.verifier_result.rewards == {"tsq": 0.5, "turns": 1.0}
    assert [str(i) for i in issues] == [
        f"{trial / 'verifier' / 'reward.json'}: rewards left out, out of their bounds: precision",
        f"{trial / 'result.json'}: rewards left out, out of their bounds: precision"]


def test_a_valid_reward_reads_without_an_issue(tmp_path):
    rewards = dict.fromkeys(SCORE_KEYS, 1.0) | dict.fromkeys(COUNT_KEYS, 2.0)
    trial = _trial(tmp_path, rewards)
    issues: list = []
    assert read_reward_file(trial, issues) == rewards
    assert read_trial_result(trial, issues).verifier_result.rewards == rewards
    assert issues == []
