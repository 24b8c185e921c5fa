"""Reading a hostile-agent job back: its trials by (agent, task), their attack records, bank
calls and rewards, and what the honest calls alone earn when the task's verifier scores them
afresh."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from harbor.models.trial.result import TrialResult

REWARD_KEYS = ("tsq", "precision", "recall", "param_validity", "multiset_f1", "goal_coverage",
               "solved")


def trials(job: Path) -> dict[tuple[str, str], Path]:
    """(agent name, task name) -> trial folder."""
    found = {}
    for result_file in job.glob("*/result.json"):
        result = TrialResult.model_validate_json(result_file.read_text())
        found[(result.agent_info.name, result.task_name)] = result_file.parent
    return found


def result(trial: Path) -> TrialResult:
    return TrialResult.model_validate_json((trial / "result.json").read_text())


def attacks(trial: Path) -> list[dict]:
    return json.loads((trial / "agent" / "attacks.json").read_text())


def honest_reward(trial: Path, task: Path) -> dict[str, float]:
    """What the calls the bank recorded earn, scored afresh by the task's own verifier."""
    out = trial / "rescored"
    subprocess.run(
        [sys.executable, str(task / "tests/verify.py"), "--intents",
         str(trial / "agent/intents.jsonl"), "--tools", str(task / "tests/tools.json"),
         "--expected", str(task / "tests/expected.json"), "--out-dir", str(out)],
        check=True, capture_output=True, timeout=60,
    )
    return json.loads((out / "reward.json").read_text())


def scored(trial: Path) -> dict[str, float]:
    rewards = result(trial).verifier_result
    assert rewards is not None and rewards.rewards is not None, trial
    return {key: rewards.rewards[key] for key in REWARD_KEYS}


def bank_calls(trial: Path) -> list[dict]:
    lines = (trial / "agent/intents.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]
