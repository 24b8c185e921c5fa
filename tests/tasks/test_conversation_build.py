"""`tasks build --mode conversation`: the customer's brief in environment/ only in that mode,
the first message alone in instruction.md with the protocol, mode and max_turns in task.toml;
the other modes unchanged by the option."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from harbor.models.task.config import TaskConfig
from harbor.models.task.task import Task

from contracts.conversation import PROTOCOL_LINE, CustomerBrief
from tasks.banking.build import build_tasks
from tasks.banking.dataset import DatasetError, load
from tasks.banking.writer import read_tree
from tests.support.built_tasks import CHEAP_LABELS

SAMPLE = load("sample")
SOME = ["banking-000", "banking-005"]
# Labels are not what these tests are about.
quiet = {"log": lambda line: None, "labels": CHEAP_LABELS}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("conversation")
    build_tasks("sample", out, mode="conversation", max_turns=7, scenarios=SOME, **quiet)
    return out


def test_the_brief_is_the_persona_goals_and_turn_limit(built: Path) -> None:
    for scenario in (s for s in SAMPLE.scenarios if s.scenario_id in SOME):
        task = built / scenario.scenario_id
        brief = CustomerBrief.model_validate_json((task / "environment/customer.json")
                                                  .read_text())
        assert brief.goals == scenario.row.user_goals and brief.max_turns == 7
        assert brief.persona.name == scenario.persona.name
        assert brief.first_message == scenario.row.first_message.strip()
        # Never the tools: the expected ones stay in tests/.
        expected = json.loads((task / "tests/expected.json").read_text())["expected_tools"]
        assert not any(tool in (task / "environment/customer.json").read_text()
                       for tool in expected)
        assert json.loads((task / "tests/conversation.json").read_text()) == {
            "mode": "conversation", "max_turns": 7}


def test_instruction_is_the_first_message_and_the_protocol(built: Path) -> None:
    for scenario in (s for s in SAMPLE.scenarios if s.scenario_id in SOME):
        text = (built / scenario.scenario_id / "instruction.md").read_text()
        assert scenario.row.first_message.strip() in text
        assert not any(goal in text for goal in scenario.row.user_goals)
        assert PROTOCOL_LINE in text.splitlines()
        assert "/app/bank say" in text and "never invent" in text
        assert not any(tool in text for tool in SAMPLE.tool_names)


def test_task_toml_carries_mode_and_turn_limit(built: Path) -> None:
    task = built / SOME[0]
    assert Task.is_valid_dir(task)
    config = TaskConfig.model_validate_toml((task / "task.toml").read_text())
    assert config.metadata["mode"] == "conversation" and config.metadata["max_turns"] == 7
    assert config.agent.timeout_sec == 600 + 120 * 7  # each turn gets its own budget


def test_the_oracle_speaks_then_calls(built: Path) -> None:
    lines = (built / SOME[0] / "solution/solve.sh").read_text().splitlines()
    assert lines[4].startswith("/app/bank say ") and lines[-1] == "/app/bank accept 1"


def test_other_modes_ignore_max_turns_and_carry_no_customer(tmp_path: Path) -> None:
    for mode in ("goals", "first-message"):
        default, other = tmp_path / f"{mode}-a", tmp_path / f"{mode}-b"
        build_tasks("sample", default, mode=mode, scenarios=SOME, **quiet)
        build_tasks("sample", other, mode=mode, max_turns=3, scenarios=SOME, **quiet)
        for sid in SOME:
            files = read_tree(default / sid)
            assert files == read_tree(other / sid)
            assert "environment/customer.json" not in files
            assert "tests/conversation.json" not in files
            meta = tomllib.loads(files["task.toml"][0].decode())["metadata"]
            assert "max_turns" not in meta and meta["mode"] == mode


def test_a_bad_turn_limit_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    for bad in (0, 101):
        with pytest.raises(DatasetError, match="--max-turns"):
            build_tasks("sample", tmp_path / "x", mode="conversation", max_turns=bad, **quiet)
    assert not (tmp_path / "x").exists()


def test_the_cli_takes_mode_and_max_turns(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bankbench", "tasks", "build", "--source", "sample", "--out",
         str(tmp_path), "--scenarios", "banking-001", "--mode", "conversation",
         "--max-turns", "4", "--labels", CHEAP_LABELS], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    brief = json.loads((tmp_path / "banking-001/environment/customer.json").read_text())
    assert brief["max_turns"] == 4 and "mode conversation (at most 4 turns)" in done.stderr
