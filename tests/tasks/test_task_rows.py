"""Row validation: every bad row is named by its id; fail stops everything, skip leaves it out."""

from __future__ import annotations

import json

import pytest

from tasks.banking.build import build_tasks
from tasks.banking.dataset import DatasetError, RawDataset, load, validate
from tests.support.taskdata import sample_rows, write_hub_layout

BAD_TYPE = json.dumps({"x": {"type": "decimal"}})


def raw(rows: dict[str, list[dict]]) -> RawDataset:
    return RawDataset(
        tools=rows["tools"],
        personas=rows["personas"],
        scenarios=rows["adaptive_tool_use"],
        revision="test",
        origin="test rows",
    )


def test_sample_is_valid():
    dataset = validate(raw(sample_rows()), "banking")
    assert dataset.bad_rows == []
    assert len(dataset.tools) == 20 and len(dataset.scenarios) == 14
    assert dataset.tools[0].title == "get_account_balance"
    assert dataset.tools[0].required == ["account_number", "account_type"]
    assert "enum" in dataset.tools[0].parameters["account_type"]


@pytest.mark.parametrize(
    ("config", "index", "change", "row_id", "words"),
    [
        ("tools", 3, {"properties": "{not"}, "tools row 3 (send_international_wire)", "not valid"),
        ("tools", 0, {"required": ["pin"]}, "tools row 0 (get_account_balance)", "'pin'"),
        ("tools", 5, {"type": "array"}, "tools row 5 (freeze_card)", "must be 'object'"),
        ("tools", 2, {"title": "transfer funds!"}, "tools row 2 (transfer funds!)", "not a valid"),
        ("tools", 7, {"properties": BAD_TYPE}, "tools row 7 (update_card_limit)", "'decimal'"),
        ("tools", 8, {"response_schema": "[1]"}, "tools row 8 (add_travel_notice)", "JSON object"),
        ("personas", 4, {"age": "forty"}, "personas row 4 (Priya Natarajan)", "age"),
        ("adaptive_tool_use", 7, {"user_goals": ["a", "b", "c"]}, "banking-007", "at least 4"),
        ("adaptive_tool_use", 2, {"user_goals": ["a"] * 9}, "banking-002", "at most 8"),
        ("adaptive_tool_use", 11, {"first_message": "   "}, "banking-011", "blank"),
        ("adaptive_tool_use", 5, {"persona_index": 99}, "banking-005", "does not exist"),
    ],
)
def test_bad_row_is_reported_with_its_id(config, index, change, row_id, words):
    rows = sample_rows()
    rows[config][index].update(change)
    dataset = validate(raw(rows), "banking")
    # (a bad persona also makes its scenarios bad: tested below)
    assert len([b for b in dataset.bad_rows if b.config == config]) == 1
    bad = dataset.bad_rows[0]
    assert bad.row_id == row_id
    assert words in bad.problem
    assert bad.line().startswith(row_id + ": ")


def test_duplicate_tool_name_keeps_the_first():
    rows = sample_rows()
    rows["tools"][9]["title"] = "freeze_card"
    dataset = validate(raw(rows), "banking")
    assert [b.row_id for b in dataset.bad_rows] == ["tools row 9 (freeze_card)"]
    assert dataset.tool_names.count("freeze_card") == 1 and len(dataset.tools) == 19


def test_scenario_of_a_bad_persona_is_bad_too():
    rows = sample_rows()
    rows["personas"][7]["personality_traits"] = []
    dataset = validate(raw(rows), "banking")
    ids = [b.row_id for b in dataset.bad_rows]
    # Persona 7 is used by scenarios 7 and 13.
    assert ids == ["personas row 7 (Tomás Ferreira)", "banking-007", "banking-013"]
    assert "persona 7 is a bad row" in dataset.bad_rows[1].problem


def test_missing_column_is_reported():
    rows = sample_rows()
    del rows["adaptive_tool_use"][3]["first_message"]
    dataset = validate(raw(rows), "banking")
    assert dataset.bad_rows[0].row_id == "banking-003"
    assert "first_message" in dataset.bad_rows[0].problem


def _broken_layout(tmp_path):
    rows = sample_rows()
    rows["adaptive_tool_use"][4]["user_goals"] = ["only one goal", "two", "three"]
    rows["tools"][6]["properties"] = "{"
    return write_hub_layout(tmp_path / "data", rows)


def test_fail_stops_before_anything_is_written(tmp_path, fake_template):
    source = _broken_layout(tmp_path)
    out = tmp_path / "out"
    with pytest.raises(DatasetError) as err:
        build_tasks(str(source), out, labels="intent", template_dir=fake_template,
                    log=lambda _: None)
    message = str(err.value)
    assert "2 bad row(s)" in message and "--on-bad-row skip" in message
    assert "tools row 6 (request_replacement_card)" in message and "banking-004" in message
    assert not out.exists()


def test_skip_leaves_bad_rows_out_and_says_so(tmp_path, fake_template):
    source = _broken_layout(tmp_path)
    out = tmp_path / "out"
    lines: list[str] = []
    summary = build_tasks(
        str(source), out, on_bad_row="skip", labels="intent", template_dir=fake_template,
        log=lines.append,
    )
    assert [b.row_id for b in summary.skipped_rows] == [
        "tools row 6 (request_replacement_card)",
        "banking-004",
    ]
    assert summary.tasks_written == 13 and "banking-004" not in summary.scenario_ids
    assert not (out / "banking-004").exists()
    tools = json.loads((out / "banking-000/environment/tools.json").read_text())
    assert "request_replacement_card" not in [t["function"]["name"] for t in tools]
    assert any(line.startswith("skipping bad row banking-004") for line in lines)
    assert any("skipped 2 bad row(s)" in line for line in lines)


def test_on_bad_row_value_is_checked():
    with pytest.raises(DatasetError, match="--on-bad-row 'maybe'"):
        load("sample", on_bad_row="maybe")  # type: ignore[arg-type]
