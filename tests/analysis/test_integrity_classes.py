"""The tool-call integrity classifier on replies with known faults: each fault of the injection
module lands in its own class through the agent's stream parser, clean replies in none, and
what a record cannot say stays unmeasured (NaN), never 0."""

from __future__ import annotations

import json
import math

import pytest

from agents.sse import StreamParser, tool_stream
from analysis.metrics.integrity import (
    ANY_COLUMN,
    COLUMNS,
    classify,
    is_classified,
    tool_schemas,
)
from contracts.llm_calls import ARGUMENTS_KEPT, StreamedCall, ToolStream
from tests.support.tool_call_faults import (
    FAULTS,
    UNDECLARED_ARGUMENT,
    classes_shown,
    corrupt,
    frontend_reply,
)

TOOL = {"type": "function", "function": {
    "name": "transfer_funds", "parameters": {
        "type": "object",
        "properties": {"from_account": {"type": "string"}, "amount": {"type": "number"},
                       "note": {"type": "str"}},
        "required": ["from_account", "amount"]}}}
SCHEMAS = tool_schemas([TOOL])
ARGS = {"from_account": "12345678", "amount": 25}


def _parse(body: bytes, choice: str = "auto") -> tuple[ToolStream, str | None, str]:
    parser = StreamParser()
    parser.feed(body, 1)
    parser.close(2)
    stream = tool_stream(parser.reply, {"tools": [TOOL], "tool_choice": choice})
    return stream, parser.reply.finish_reason, "".join(parser.reply.content)


def _found(body: bytes, choice: str = "auto", tools=SCHEMAS) -> set[str]:
    stream, finish, content = _parse(body, choice)
    return {k.removeprefix("tc_") for k, v in classify(stream, finish, content, tools).items()
            if v == 1.0 and k != ANY_COLUMN}


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("finish", ["length", "tool_calls"])
def test_each_injected_fault_lands_in_its_class(fault, finish):
    body = frontend_reply([("transfer_funds", ARGS)], finish=finish)
    assert _found(body) == set()
    assert _found(corrupt(body, fault, [TOOL])) == classes_shown(fault, finish)


def test_clean_replies_with_a_call_or_text_fall_in_no_class():
    for finish in ("tool_calls", "length"):
        assert _found(frontend_reply([("transfer_funds", ARGS)], finish=finish)) == set()
    assert _found(frontend_reply([], text="Your transfer is done.", finish="stop")) == set()


def test_a_call_ending_stop_is_a_mismatch_only_when_the_model_chose_to_call():
    body = frontend_reply([("transfer_funds", ARGS)], finish="stop")
    assert _found(body, choice="auto") == {"finish_mismatch"}
    for forced in ("required", "transfer_funds"):  # OpenAI ends a forced call with "stop"
        assert _found(body, choice=forced) == set()


def test_an_incremental_stream_with_the_id_once_is_clean():
    """llama.cpp's and vLLM's shape: the id and name in the first delta, arguments in pieces."""
    text = json.dumps(ARGS)
    chunks = [{"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [
        {"index": 0, "id": "abc", "type": "function",
         "function": {"name": "transfer_funds", "arguments": ""}}]}}]}]
    chunks += [{"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "function": {"arguments": text[i:i + 5]}}]}}]}
        for i in range(0, len(text), 5)]
    chunks += [{"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}]
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    assert _found(body + b"data: [DONE]\n\n") == set()
    assert _found(body) == {"unterminated"}  # the same without its [DONE]


def _stream(*calls: StreamedCall, unindexed: int = 0, done: bool = True) -> ToolStream:
    return ToolStream(offered=1, choice="auto", calls=list(calls), n_calls=len(calls),
                      unindexed_deltas=unindexed, done=done)


def _call(index: int, ids: tuple[str, ...] = ("x",), arguments: str = '{"from_account": "1", '
          '"amount": 2}', name: str = "transfer_funds") -> StreamedCall:
    return StreamedCall(index=index, ids=list(ids), name=name, arguments=arguments,
                        arguments_chars=len(arguments))


def _flags(stream: ToolStream, finish: str | None = "tool_calls", content: str | None = "",
           tools=SCHEMAS, reasoning: bool = False) -> dict[str, float]:
    return classify(stream, finish, content, tools, reasoning)


def test_ids_and_indices():
    assert _flags(_stream(_call(0, ("a",)), _call(1, ("a",))))["tc_duplicate_call_id"] == 1
    assert _flags(_stream(_call(0, ("a", "b"))))["tc_duplicate_call_id"] == 1
    assert _flags(_stream(_call(0, ("a",)), _call(2, ("b",))))["tc_missing_call_id"] == 1
    assert _flags(_stream(_call(0, ())))["tc_missing_call_id"] == 1
    assert _flags(_stream(_call(0), unindexed=1))["tc_missing_call_id"] == 1
    clean = _flags(_stream(_call(0, ("a",)), _call(1, ("b",))))
    assert clean[ANY_COLUMN] == 0 and clean["tc_missing_call_id"] == 0


def test_schema_checks_name_the_kind_and_follow_the_schema():
    assert _flags(_stream(_call(0, arguments='{"amount": 2}')))["tc_argument_missing"] == 1
    wrong = _flags(_stream(_call(0, arguments='{"from_account": 1, "amount": "2"}')))
    assert wrong["tc_argument_wrong_type"] == 1 and wrong["tc_argument_missing"] == 0
    # "str" is the Python spelling of string; a bool is never a number; 3.0 is an integer
    assert _flags(_stream(_call(0, arguments='{"from_account": "1", "amount": 2, '
                                            '"note": "n"}')))[ANY_COLUMN] == 0
    assert _flags(_stream(_call(0, arguments='{"from_account": "1", "amount": true}'))
                  )["tc_argument_wrong_type"] == 1
    extra = f'{{"from_account": "1", "amount": 2, "{UNDECLARED_ARGUMENT}": 1}}'
    assert _flags(_stream(_call(0, arguments=extra)))["tc_argument_unknown"] == 1
    open_schema = {"transfer_funds": {**SCHEMAS["transfer_funds"],
                                      "additionalProperties": True}}
    assert _flags(_stream(_call(0, arguments=extra)), tools=open_schema)[ANY_COLUMN] == 0
    assert _flags(_stream(_call(0, name="")))["tc_unknown_tool"] == 1


def test_arguments_kept_in_part_are_not_judged_as_broken():
    long = '{"from_account": "' + "1" * ARGUMENTS_KEPT + '", "amount": 2}'
    call = StreamedCall(index=0, ids=["x"], name="transfer_funds",
                        arguments=long[:ARGUMENTS_KEPT], arguments_chars=len(long))
    flags = _flags(_stream(call), finish="length")
    assert flags["tc_arguments_not_json"] == 0 and flags["tc_cut_by_length"] == 0


def test_unknown_inputs_are_unmeasured_not_zero():
    flags = _flags(_stream(_call(0, name="other_tool")), content=None, tools=None)
    for key in ("tc_markup_in_content", "tc_unbalanced_tags", "tc_cut_by_length",
                "tc_unknown_tool", "tc_argument_missing"):
        assert math.isnan(flags[key]), key
    assert flags["tc_unterminated"] == 0 and flags[ANY_COLUMN] == 0
    assert set(flags) == set(COLUMNS)
    # only replies to requests that succeeded and offered tools are classified
    assert is_classified(_stream(_call(0)), ok=True)
    assert not is_classified(_stream(_call(0)), ok=False)
    assert not is_classified(None, ok=True)  # a record from before tool_stream
    assert not is_classified(ToolStream(offered=0, done=True), ok=True)  # text mode


def test_a_length_cut_that_left_nothing_is_a_cut_call():
    """llama.cpp's own parser, a call cut by max_tokens: no text, no call, finish 'length'."""
    assert _flags(_stream(), finish="length", content="")["tc_cut_by_length"] == 1
    # the tokens went to reasoning, or to text: not a swallowed call
    assert _flags(_stream(), finish="length", content="", reasoning=True)[ANY_COLUMN] == 0
    assert _flags(_stream(), finish="length", content="A long answer")[ANY_COLUMN] == 0


def test_tags_in_text():
    flags = _flags(_stream(), finish="stop", content="<think>a</think> ok")
    assert flags[ANY_COLUMN] == 0
    flags = _flags(_stream(), finish="length", content='<tool_call>{"name": "transfer_f')
    assert flags["tc_markup_in_content"] == flags["tc_unbalanced_tags"] == 1
    assert flags["tc_cut_by_length"] == 1
    assert _flags(_stream(), finish="stop", content="done</think>")["tc_unbalanced_tags"] == 1
