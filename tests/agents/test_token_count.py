"""Client-side token counts (`--ak tokenizer`) and who counted, in the record."""

from __future__ import annotations

import json

import pytest

from agents.options import parse_options
from agents.token_count import TokenCounter, TokenizerError
from contracts.llm_calls import LLMCallRecord


@pytest.fixture(scope="module")
def tokenizer_file(tmp_path_factory):
    """A tiny word-level tokenizers JSON, written here so the test needs no model files."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"[UNK]": 0, "balance": 1, "of": 2, "checking": 3, "get_balance": 4, "{": 5, "}": 6}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    path = tmp_path_factory.mktemp("tok") / "tokenizer.json"
    tok.save(str(path))
    return path


def test_counts_message_text_tool_calls_and_schemas(tokenizer_file):
    counter = TokenCounter(tokenizer_file.parent)  # a folder holding tokenizer.json works too
    messages = [{"role": "user", "content": "balance of checking"},
                {"role": "assistant", "content": None,
                 "tool_calls": [{"function": {"name": "get_balance", "arguments": "{ }"}}]}]
    assert counter.prompt(messages, None) == 3 + 3
    tools = [{"type": "function"}]
    assert counter.prompt(messages, tools) == 6 + len(json.dumps(tools).split())
    assert counter.completion("balance", [{"name": "get_balance", "arguments": "{ }"}]) == 4
    assert counter.completion("", []) == 0


def test_a_missing_tokenizer_is_one_clear_error(tmp_path):
    with pytest.raises(TokenizerError, match="cannot load"):
        TokenCounter(tmp_path)
    assert parse_options({"tokenizer": str(tmp_path)}).tokenizer == str(tmp_path)


def _record(**fields) -> LLMCallRecord:
    return LLMCallRecord(request_id="r", trial_name="t", scenario_id="s", attempt=1, step=1,
                         role="agent", model="m", start_unix_ns=0, **fields)


def test_token_source_unknown_stays_unknown_and_old_counts_are_the_servers():
    assert _record().token_source is None and _record().completion_tokens is None
    assert _record(prompt_tokens=10, completion_tokens=2).token_source == "server"
    client = _record(prompt_tokens=10, completion_tokens=2, token_source="client")
    assert LLMCallRecord.model_validate_json(client.model_dump_json()).token_source == "client"
