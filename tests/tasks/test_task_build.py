"""The writer's output against the task contract, idempotence, stale dirs, refusals."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import jsonschema
import pytest
from harbor.models.task.config import TaskConfig
from harbor.models.task.task import Task

from contracts.expected import Expected
from contracts.reward import SCORE_KEYS
from tasks.banking.build import TEMPLATE_DIR, TEMPLATE_FILES, build_tasks
from tasks.banking.dataset import DatasetError, load
from tasks.banking.labels import LabelsError, sentence
from tasks.banking.sample import GOLD_LABELS_PATH, SAMPLE_VERSION, gold_labels
from tasks.banking.writer import WriteError, read_tree
from tests.support.built_tasks import CHEAP_LABELS
from tests.support.taskdata import sample_rows, write_hub_layout

SAMPLE = load("sample")
TOOL_NAMES = SAMPLE.tool_names
quiet = {"log": lambda line: None}
# For builds whose labels are not what the test is about (the built_sample fixture keeps the
# default method, whose output the contract tests read).
cheap = {**quiet, "labels": CHEAP_LABELS}
ORACLE_RUN = ("banking-002", "banking-008", "banking-012")  # 15 of the 20 tools between them


def task_dirs(out: Path) -> list[Path]:
    return sorted(p for p in out.iterdir() if p.is_dir())


def solve_calls(task: Path) -> list[tuple[str, dict]]:
    calls = []
    lines = (task / "solution/solve.sh").read_text().splitlines()
    assert lines[0] == "#!/bin/bash" and lines[-1] == "/app/bank accept 1"
    for line in lines:
        words = shlex.split(line, comments=True)
        if words[:2] == ["/app/bank", "call"]:
            assert len(words) == 4, line
            calls.append((words[2], json.loads(words[3])))
    return calls


def test_every_scenario_becomes_a_harbor_task(built_sample):
    dirs = task_dirs(built_sample)
    assert [d.name for d in dirs] == [s.scenario_id for s in SAMPLE.scenarios]
    for task_dir in dirs:
        assert Task.is_valid_dir(task_dir), task_dir
        task = Task(task_dir)
        assert task.name == task_dir.name


def test_task_toml_metadata(built_sample):
    for scenario in SAMPLE.scenarios:
        text = (built_sample / scenario.scenario_id / "task.toml").read_text()
        config = TaskConfig.model_validate_toml(text)
        assert config.metadata == {
            "scenario_id": scenario.scenario_id,
            "domain": "banking",
            "persona_index": scenario.row.persona_index,
            "n_goals": len(scenario.row.user_goals),
            "labels": f"sentence@{sentence.VERSION}",
            "dataset_revision": f"sample-{SAMPLE_VERSION}",
            "mode": "goals",
            "dataset": "galileo-ai/agent-leaderboard-v2",
            "builder": config.metadata["builder"],
        }
        assert config.metadata["builder"].startswith("bankbench ")
        assert config.agent.timeout_sec == 600 and config.verifier.timeout_sec == 60


def test_instruction_states_the_requests_but_never_the_tools(built_sample):
    for scenario in SAMPLE.scenarios:
        text = (built_sample / scenario.scenario_id / "instruction.md").read_text()
        assert scenario.row.first_message in text
        assert all(goal in text for goal in scenario.row.user_goals)
        assert "/app/bank tools" in text
        leaked = [n for n in TOOL_NAMES if re.search(rf"\b{re.escape(n)}\b", text)]
        assert leaked == [], (scenario.scenario_id, leaked)


def test_expected_json_follows_the_contract(built_sample):
    for scenario in SAMPLE.scenarios:
        raw = (built_sample / scenario.scenario_id / "tests/expected.json").read_text()
        expected = Expected.model_validate_json(raw)
        assert expected.scenario_id == scenario.scenario_id
        assert expected.labels.method == "sentence" and expected.labels.source is None
        assert [g.text for g in expected.goals] == scenario.row.user_goals
        # The set-F1 side takes each served goal's preferred tool; the rest are alternatives.
        preferred = [g.tools[0] for g in expected.goals if g.tools]
        assert expected.expected_tools == preferred
        # Every goal is decided: tools, or an explicit no-tool mark with its reason.
        assert all(bool(g.tools) != g.no_tool for g in expected.goals)
        assert all(g.reason for g in expected.goals if g.no_tool)
        assert set(expected.expected_tools) <= set(TOOL_NAMES)
        assert expected.provenance.dataset_revision == f"sample-{SAMPLE_VERSION}"


def test_environment_files(built_sample):
    env = built_sample / "banking-000" / "environment"
    tools = json.loads((env / "tools.json").read_text())
    assert [t["function"]["name"] for t in tools] == TOOL_NAMES
    for tool, row in zip(tools, SAMPLE.tools, strict=True):
        assert tool["type"] == "function"
        assert set(tool["function"]) == {"name", "description", "parameters"}
        params = tool["function"]["parameters"]
        assert params == {"type": "object", "properties": row.parameters, "required": row.required}
        jsonschema.Draft202012Validator.check_schema(params)
    responses = json.loads((env / "responses.json").read_text())
    assert list(responses) == TOOL_NAMES
    assert responses["get_account_balance"]["properties"]["available_balance"] == {"type": "number"}
    assert "FROM python:3.12-slim" in (env / "Dockerfile").read_text()
    assert "COPY . /app" in (env / "Dockerfile").read_text()


def test_template_files_are_copied_verbatim(built_sample):
    for task_dir in task_dirs(built_sample):
        for rel, mode in TEMPLATE_FILES.items():
            assert (task_dir / rel).read_bytes() == (TEMPLATE_DIR / rel).read_bytes()
            assert (task_dir / rel).stat().st_mode & 0o777 == mode
        assert os.access(task_dir / "solution/solve.sh", os.X_OK)


def test_solution_calls_every_expected_tool_with_valid_arguments(built_sample):
    for task_dir in task_dirs(built_sample):
        expected = json.loads((task_dir / "tests/expected.json").read_text())
        tools = json.loads((task_dir / "environment/tools.json").read_text())
        schemas = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
        calls = solve_calls(task_dir)
        assert [name for name, _ in calls] == expected["expected_tools"]
        for name, arguments in calls:
            jsonschema.validate(arguments, schemas[name])


def test_oracle_scores_one_with_the_real_bank_and_verifier(built_sample, tmp_path):
    """solve.sh against the task's own bank, then its own test.sh: every reward number is 1.

    Three tasks keep it quick (each call is a process); every other solve.sh is checked against
    the schemas above."""
    for task_dir in [built_sample / sid for sid in ORACLE_RUN]:
        logs = tmp_path / task_dir.name
        logs.mkdir()
        env = dict(os.environ, BANK_INTENTS=str(logs / "intents.jsonl"), VERIFIER_OUT_DIR=str(logs))
        script = (task_dir / "solution/solve.sh").read_text()
        script = script.replace("/app/bank", shlex.quote(str(task_dir / "environment/bank")))
        done = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
        subprocess.run(["bash", str(task_dir / "tests/test.sh")], env=env, check=True)
        reward = json.loads((logs / "reward.json").read_text())
        assert {key: reward[key] for key in SCORE_KEYS} == dict.fromkeys(SCORE_KEYS, 1.0), (
            task_dir.name, reward)


def test_first_message_mode_leaves_the_goals_out(tmp_path, fake_template):
    build_tasks(
        "sample", tmp_path, mode="first-message", limit=1, template_dir=fake_template, **cheap
    )
    text = (tmp_path / "banking-000/instruction.md").read_text()
    scenario = SAMPLE.scenarios[0]
    assert scenario.row.first_message in text
    assert not any(goal in text for goal in scenario.row.user_goals)
    assert 'mode = "first-message"' in (tmp_path / "banking-000/task.toml").read_text()


def test_curated_labels_have_no_per_goal_tools(tmp_path, fake_template):
    summary = build_tasks(
        "sample", tmp_path, labels=f"file:{GOLD_LABELS_PATH}", template_dir=fake_template, **quiet
    )
    assert summary.labels.startswith("file@sha256:")
    for sid, tools in gold_labels().items():
        raw = (tmp_path / sid / "tests/expected.json").read_text()
        expected = Expected.model_validate_json(raw)
        assert expected.expected_tools == tools
        assert expected.labels.source == str(GOLD_LABELS_PATH)
        assert all(goal.tools is None for goal in expected.goals)
        assert [name for name, _ in solve_calls(tmp_path / sid)] == tools


def test_rebuild_is_byte_identical_and_touches_nothing(tmp_path, fake_template):
    first = build_tasks("sample", tmp_path, template_dir=fake_template, **cheap)
    assert first.tasks_changed == 14
    before = read_tree(tmp_path)
    mtimes = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")}
    second = build_tasks("sample", tmp_path, template_dir=fake_template, **cheap)
    assert second.tasks_changed == 0 and second.tasks_unchanged == 14
    assert read_tree(tmp_path) == before
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")} == mtimes
    # A different labelling rewrites the tasks, atomically, leaving no staging dirs behind.
    third = build_tasks("sample", tmp_path, labels="keyword", template_dir=fake_template, **quiet)
    assert third.tasks_changed == 14
    assert sorted(p.name for p in tmp_path.iterdir()) == [s.scenario_id for s in SAMPLE.scenarios]


def test_stale_task_dirs_are_reported_then_pruned(tmp_path, fake_template):
    rows = sample_rows()
    source = write_hub_layout(tmp_path / "data", rows)
    out = tmp_path / "out"
    build_tasks(str(source), out, labels="intent", template_dir=fake_template, **quiet)
    rows["adaptive_tool_use"] = rows["adaptive_tool_use"][:12]
    write_hub_layout(source, rows)
    lines: list[str] = []
    summary = build_tasks(str(source), out, labels="intent", template_dir=fake_template,
                          log=lines.append)
    assert summary.stale == ["banking-012", "banking-013"] and summary.pruned == []
    assert (out / "banking-013").exists()
    assert any("2 stale task dir(s) left in place" in line for line in lines)
    summary = build_tasks(str(source), out, prune_stale=True, labels="intent",
                          template_dir=fake_template, **quiet)
    assert summary.pruned == ["banking-012", "banking-013"]
    assert not (out / "banking-013").exists() and (out / "banking-011").exists()


def test_subset_build_reports_other_dirs_without_calling_them_stale(tmp_path, fake_template):
    build_tasks("sample", tmp_path, template_dir=fake_template, **cheap)
    summary = build_tasks(
        "sample", tmp_path, scenarios=["banking-009", "banking-002"], template_dir=fake_template,
        **cheap,
    )
    assert summary.scenario_ids == ["banking-009", "banking-002"]
    assert summary.stale == [] and len(summary.not_rebuilt) == 12


def test_a_foreign_directory_is_never_replaced(tmp_path, fake_template):
    (tmp_path / "banking-000").mkdir()
    (tmp_path / "banking-000" / "notes.txt").write_text("mine")
    with pytest.raises(WriteError, match="not a bankbench task"):
        build_tasks("sample", tmp_path, limit=1, template_dir=fake_template, **cheap)
    assert (tmp_path / "banking-000" / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"scenarios": ["banking-003", "banking-044"]}, DatasetError, "unknown banking-044"),
        ({"limit": 0}, DatasetError, "--limit 0"),
        ({"mode": "chat"}, DatasetError, "--mode 'chat'"),
        ({"labels": "file:/nope.json"}, LabelsError, "cannot read"),
    ],
)
def test_bad_options_stop_before_writing(tmp_path, fake_template, kwargs, error, words):
    with pytest.raises(error, match=words):
        build_tasks("sample", tmp_path / "out", template_dir=fake_template, **kwargs, **quiet)
    assert not (tmp_path / "out").exists()


def test_missing_template_is_named(tmp_path):
    with pytest.raises(DatasetError, match="task template incomplete: missing .*environment/bank"):
        build_tasks("sample", tmp_path / "out", template_dir=tmp_path / "none", **cheap)


def test_a_tool_name_in_the_customers_text_is_flagged(tmp_path, fake_template):
    rows = sample_rows()
    rows["adaptive_tool_use"][1]["user_goals"][0] = "Please run freeze_card on my debit card"
    source = write_hub_layout(tmp_path / "data", rows)
    lines: list[str] = []
    out = tmp_path / "out"
    build_tasks(str(source), out, limit=3, labels="intent", template_dir=fake_template,
                log=lines.append)
    assert [line for line in lines if line.startswith("warning")] == [
        "warning: banking-001: the customer's text names tool(s) freeze_card"
    ]
