"""tools.json through its one contract: what the builder writes reads back as it was written,
and a file that is not a list of function tools is one line naming where."""

from __future__ import annotations

import json

import pytest

from analysis.trial_inputs import read_trial_inputs
from contracts.tools import TOOLS_FILE, read_tools
from tasks.banking import render, sample
from tasks.banking.dataset import validate


def test_what_the_builder_writes_reads_back_unchanged(tmp_path):
    dataset = validate(sample.raw_dataset(), "banking")
    path = tmp_path / TOOLS_FILE
    path.write_text(render.tools_json(dataset.tools))
    tools = read_tools(path)
    assert [t.function.name for t in tools] == [row.title for row in dataset.tools]
    assert [t.model_dump(exclude_unset=True) for t in tools] == json.loads(path.read_text())


@pytest.mark.parametrize(("text", "where"), [
    ('{"type": "function"}', "the file: Input should be a valid array"),
    ('[{"type": "function", "function": {"description": "x"}}]', "0.function.name: Field required"),
    ('[{"type": "web", "function": {"name": "a"}}]', "0.type: Input should be 'function'"),
    ("[{", "the file: Invalid JSON"),
])
def test_a_file_that_is_not_function_tools_is_one_line(tmp_path, text, where):
    path = tmp_path / TOOLS_FILE
    path.write_text(text)
    with pytest.raises(ValueError) as caught:
        read_tools(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: not a list of function tools ({where}")
    assert "\n" not in message


def test_a_trials_known_tools_come_through_it_and_a_bad_file_is_an_issue(tmp_path):
    task = tmp_path / "tasks" / "banking-001"
    (task / "environment").mkdir(parents=True)
    trial = tmp_path / "job" / "banking-001__abc"
    trial.mkdir(parents=True)
    (task / "environment" / TOOLS_FILE).write_text(
        '[{"type": "function", "function": {"name": "get_balance"}}]')
    issues: list = []
    assert read_trial_inputs(trial, "banking-001", issues, task).known_tools == ["get_balance"]
    (task / "environment" / TOOLS_FILE).write_text('[{"function": {"name": 3}}]')
    assert read_trial_inputs(trial, "banking-001", issues, task).known_tools == []
    assert [i.message for i in issues if i.path.endswith(TOOLS_FILE)] == [
        "not a list of function tools (0.function.name: Input should be a valid string)"]
