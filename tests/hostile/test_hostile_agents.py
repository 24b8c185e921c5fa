"""Cheating agents on the real `harbor run` with LocalEnvironment: every attempt fails or is
bounded, and each trial's reward is what its honest bank calls earn (0 for none).

One Harbor job runs every hostile agent (hostile_agents.py) and the oracle on two banking
tasks, with tight bounds (--ek) so the disk and process attacks end quickly.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.hostile_trials import (
    REWARD_KEYS,
    attacks,
    bank_calls,
    honest_reward,
    result,
    scored,
    trials,
)
from tests.support.sample_job import run_sample_job

pytestmark = [pytest.mark.harbor, pytest.mark.timeout(900)]

HERE = Path(__file__).resolve().parent
TASKS = ("banking-002", "banking-008")
HOSTILE = ("AnswerReader", "IntentForger", "ScoreWriter", "ForkBomber", "DiskFiller")
BOUNDS = {"scratch_mb": 64, "max_file_mb": 16, "max_processes": 128}


@pytest.fixture(scope="module")
def job(tmp_path_factory) -> Path:
    return run_sample_job(
        tmp_path_factory.mktemp("hostile"), "hostile", TASKS,
        agents=[{"import_path": f"hostile_agents:{name}"} for name in HOSTILE]
        + [{"name": "oracle"}],
        n_concurrent=4, env_kwargs=BOUNDS, pythonpath=(HERE,), timeout=800,
    )


def test_every_trial_ran_and_was_scored(job):
    found = trials(job)
    agents = {"answer-reader", "intent-forger", "score-writer", "fork-bomber", "disk-filler",
              "oracle"}
    assert set(found) == {(agent, task) for agent in agents for task in TASKS}
    for key, trial in found.items():
        assert result(trial).exception_info is None, (key, result(trial).exception_info)


def test_the_oracle_still_scores_one(job):
    for task in TASKS:
        assert scored(trials(job)[("oracle", task)]) == dict.fromkeys(REWARD_KEYS, 1.0)


def test_scores_are_what_the_honest_bank_calls_earn(job):
    tasks = Path(json.loads((job.parent.parent / "job.json").read_text())["tasks"][0]["path"])
    for (agent, task), trial in trials(job).items():
        rewards = result(trial).verifier_result.rewards  # every key, the goal scores too
        assert rewards == honest_reward(trial, tasks.parent / task), (agent, task)


def test_answers_stay_out_of_reach(job):
    for task in TASKS:
        trial = trials(job)[("answer-reader", task)]
        seen = "".join(a["stdout"] for a in attacks(trial))
        assert attacks(trial) and "expected_tools" not in seen and "bank call" not in seen
        assert "scored_attempt" not in seen  # no other trial's verifier output either
        assert bank_calls(trial) == [] and scored(trial)["tsq"] == 0.0


def test_forged_records_never_land_and_score_nothing(job):
    for task in TASKS:
        trial = trials(job)[("intent-forger", task)]
        log = trial / "agent/intents.jsonl"
        assert not log.is_symlink() and log.stat().st_uid == 0 and log.stat().st_size == 0
        assert all(a["return_code"] != 0 for a in attacks(trial)[:5]), attacks(trial)
        assert scored(trial) == dict.fromkeys(REWARD_KEYS, 0.0)


def test_written_scores_and_leftover_writers_are_overruled(job):
    for task in TASKS:
        trial = trials(job)[("score-writer", task)]
        assert all(a["return_code"] != 0 for a in attacks(trial)[:2])
        [call] = bank_calls(trial)  # the one honest call, and no forged line after it
        details = json.loads((trial / "verifier/tsq.json").read_text())
        assert details["actual_tools"] == [call["tool"]]


def test_fork_bombs_are_bounded_and_end_before_verification(job):
    for task in TASKS:
        trial = trials(job)[("fork-bomber", task)]
        call, bomb = attacks(trial)
        assert bomb["stdout"].split()[0] == str(BOUNDS["max_processes"])
        assert int(bomb["stdout"].split()[-1]) <= BOUNDS["max_processes"] + 20
        assert call["return_code"] in (0, 2) and len(bank_calls(trial)) == 1  # 2: refused args


def test_disk_filling_is_bounded(job):
    for task in TASKS:
        trial = trials(job)[("disk-filler", task)]
        tmp, shm, logs = (attacks(trial)[i] for i in range(3))
        mib = 1024 * 1024
        sizes = {name: [int(w) for w in attempt["stdout"].split() if w.isdigit()]
                 for name, attempt in (("tmp", tmp), ("shm", shm), ("logs", logs))}
        for attempt in (tmp, shm):  # one scratch tmpfs for both
            assert "No space left on device" in attempt["stdout"], attempt
        assert sum(sizes["tmp"]) + sum(sizes["shm"]) <= BOUNDS["scratch_mb"] * mib, sizes
        assert max(sizes["logs"]) <= BOUNDS["max_file_mb"] * mib, logs
        assert not list((trial / "agent").glob("fill*"))
        assert len(bank_calls(trial)) == 1
