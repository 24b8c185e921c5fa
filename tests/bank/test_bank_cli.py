"""The mock bank as an agent uses it: `bank tools`, `bank call`, `bank accept` (real script)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.support.bank_harness import BANK_SCRIPT, FIXTURES, Bank

VALID_BALANCE = {"account_number": "00123", "account_type": "savings"}
VALID_TRANSFER = {"from_account": "00123", "to_account": "00456", "amount": 200}


def test_tools_prints_the_tool_list(bank: Bank) -> None:
    result = bank.run("tools")
    assert result.returncode == 0
    assert result.json() == json.loads((FIXTURES / "tools.json").read_text())
    assert not bank.intents.exists()  # listing tools is not a decision


def test_valid_call_is_recorded_and_answered(bank: Bank) -> None:
    result = bank.run("call", "get_account_balance", json.dumps(VALID_BALANCE))
    assert result.returncode == 0, result.stdout
    reply = result.json()
    assert set(reply) == {
        "account_number",
        "balance",
        "currency",
        "as_of_date",
        "status",
        "interest_rate",
    }
    assert 0.1 <= reply["interest_rate"] <= 0.2  # the response schema's bounds hold
    assert reply["account_number"] == "00123"  # echoed from the arguments
    assert isinstance(reply["balance"], float)
    assert reply["status"] in ("active", "frozen")
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", reply["as_of_date"])
    [record] = bank.records()
    assert record["seq"] == 1 and record["attempt"] == 1
    assert record["tool"] == "get_account_balance"
    assert record["arguments"] == VALID_BALANCE
    assert record["valid"] is True and record["errors"] == []
    assert isinstance(record["ts"], float)


def test_replies_are_deterministic_per_tool_and_arguments(bank: Bank) -> None:
    first = bank.run("call", "transfer_funds", json.dumps(VALID_TRANSFER)).json()
    again = bank.run("call", "transfer_funds", json.dumps(VALID_TRANSFER)).json()
    other = bank.run("call", "transfer_funds", json.dumps(dict(VALID_TRANSFER, amount=7))).json()
    assert first == again
    assert first["transaction_id"] != other["transaction_id"]


def test_reply_follows_nested_response_schema(bank: Bank) -> None:
    reply = bank.run("call", "list_recent_transactions", '{"account_number": "9"}').json()
    assert isinstance(reply["total_count"], int) and 0 <= reply["total_count"] <= 5
    assert 1 <= len(reply["transactions"]) <= 2  # maxItems
    for item in reply["transactions"]:
        assert re.fullmatch(r"[A-Z]+-\d{6}", item["transaction_id"])
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", item["posted_date"])
        assert isinstance(item["amount"], float)
        assert set(item["merchant"]) == {"name", "category"}


def test_tool_without_response_schema_still_answers(bank: Bank, tmp_path: Path) -> None:
    bank_dir = tmp_path / "app"
    bank_dir.mkdir()
    (bank_dir / "tools.json").write_text((FIXTURES / "tools.json").read_text())
    (bank_dir / "responses.json").write_text("{}")
    bank.bank_dir = bank_dir
    result = bank.run("call", "get_account_balance", json.dumps(VALID_BALANCE))
    assert result.returncode == 0
    assert result.json() == {"status": "success", "tool": "get_account_balance"}


@pytest.mark.parametrize(
    ("args", "env", "attempt"),
    [
        ([], {}, 1),
        (["--attempt", "2"], {}, 2),
        (["--attempt=4"], {}, 4),
        ([], {"BANK_ATTEMPT": "3"}, 3),
        (["--attempt", "5"], {"BANK_ATTEMPT": "3"}, 5),
    ],
)
def test_attempt_comes_from_flag_then_env_then_one(
    bank: Bank, args: list[str], env: dict[str, str], attempt: int
) -> None:
    result = bank.run("call", "get_account_balance", json.dumps(VALID_BALANCE), *args, **env)
    assert result.returncode == 0
    assert bank.records()[0]["attempt"] == attempt


INVALID_CASES = [
    pytest.param(
        "get_account_balance",
        {"account_number": "1"},
        "arguments: missing required property 'account_type'",
        id="missing-required",
    ),
    pytest.param(
        "get_account_balance",
        {"account_number": 1, "account_type": "savings"},
        "arguments.account_number: expected string, got integer 1",
        id="string-type",
    ),
    pytest.param(
        "get_account_balance",
        {"account_number": "1", "account_type": "gold"},
        'arguments.account_type: "gold" is not one of the allowed values',
        id="enum",
    ),
    pytest.param(
        "get_account_balance",
        dict(VALID_BALANCE, branch="x"),
        "arguments: unknown property 'branch' (allowed: account_number, account_type)",
        id="additional-properties",
    ),
    pytest.param(
        "transfer_funds",
        dict(VALID_TRANSFER, amount="200"),
        'arguments.amount: expected number, got string "200"',
        id="number-type",
    ),
    pytest.param(
        "transfer_funds",
        dict(VALID_TRANSFER, amount=True),
        "arguments.amount: expected number, got boolean true",
        id="bool-is-not-number",
    ),
    pytest.param(
        "transfer_funds",
        dict(VALID_TRANSFER, installments=2.5),
        "arguments.installments: expected integer, got number 2.5",
        id="integer-type",
    ),
    pytest.param(
        "transfer_funds",
        dict(VALID_TRANSFER, urgent=1),
        "arguments.urgent: expected boolean, got integer 1",
        id="boolean-type",
    ),
    pytest.param(
        "transfer_funds",
        dict(VALID_TRANSFER, tags="a"),
        "arguments.tags: expected array, got string",
        id="array-type",
    ),
    pytest.param(
        "transfer_funds",
        dict(VALID_TRANSFER, tags=["a", 3]),
        "arguments.tags[1]: expected string, got integer 3",
        id="array-items",
    ),
    pytest.param(
        "transfer_funds",
        dict(VALID_TRANSFER, memo="hi"),
        "arguments.memo: expected object, got string",
        id="object-type",
    ),
    pytest.param(
        "transfer_funds",
        dict(VALID_TRANSFER, memo={}),
        "arguments.memo: missing required property 'text'",
        id="nested-required",
    ),
    pytest.param(
        "transfer_funds",
        dict(VALID_TRANSFER, memo={"text": "x", "to": "y"}),
        "arguments.memo: unknown property 'to'",
        id="nested-additional",
    ),
    pytest.param(
        "transfer_funds",
        dict(VALID_TRANSFER, memo={"text": "x", "channel": "fax"}),
        'arguments.memo.channel: "fax" is not one of',
        id="nested-enum",
    ),
    pytest.param(
        "transfer_funds",
        dict(VALID_TRANSFER, amount=0),
        "arguments.amount: must be at least 0.01",
        id="minimum",
    ),
    pytest.param(
        "list_recent_transactions",
        {"account_number": "1", "days": 91},
        "arguments.days: must be at most 90, got 91",
        id="maximum",
    ),
    pytest.param(
        "list_recent_transactions",
        {"account_number": "1", "since": "last monday"},
        'arguments.since: "last monday" is not a valid date (YYYY-MM-DD)',
        id="date-format",
    ),
    pytest.param(
        "list_recent_transactions",
        {"account_number": "1", "since": "2026-02-30"},
        "is not a valid date",
        id="impossible-date",
    ),
    pytest.param(
        "list_recent_transactions",
        {"account_number": "1", "notify": "alex at example"},
        "is not a valid email",
        id="email-format",
    ),
]


@pytest.mark.parametrize(("tool", "arguments", "message"), INVALID_CASES)
def test_invalid_arguments_are_rejected_with_a_clear_error(
    bank: Bank, tool: str, arguments: dict, message: str
) -> None:
    result = bank.run("call", tool, json.dumps(arguments))
    assert result.returncode == 2
    reply = result.json()
    assert reply["error"].startswith(f"invalid arguments for {tool}")
    assert any(message in detail for detail in reply["details"]), reply["details"]
    [record] = bank.records()
    assert record["valid"] is False
    assert record["arguments"] == arguments
    assert any(message in error for error in record["errors"])


def test_every_problem_is_reported_at_once(bank: Bank) -> None:
    arguments = {"from_account": 1, "amount": "x", "urgent": "yes", "tags": [1, 2]}
    reply = bank.run("call", "transfer_funds", json.dumps(arguments)).json()
    assert reply["error"] == "invalid arguments for transfer_funds (6 problems)"
    assert len(reply["details"]) == 6


def test_well_formed_formats_pass(bank: Bank) -> None:
    arguments = {"account_number": "1", "since": "2026-02-28", "notify": "a.b@example.com"}
    assert bank.run("call", "list_recent_transactions", json.dumps(arguments)).returncode == 0


def test_integral_float_counts_as_integer(bank: Bank) -> None:
    result = bank.run("call", "transfer_funds", json.dumps(dict(VALID_TRANSFER, installments=3.0)))
    assert result.returncode == 0
    assert bank.records()[0]["valid"] is True


def test_unknown_tool_suggests_close_names(bank: Bank) -> None:
    result = bank.run("call", "get_acount_balance", json.dumps(VALID_BALANCE))
    assert result.returncode == 2
    reply = result.json()
    assert reply["error"] == "unknown tool 'get_acount_balance'"
    assert "did you mean: get_account_balance?" in reply["details"]
    assert (
        "available tools: get_account_balance, list_recent_transactions, transfer_funds"
        in reply["details"]
    )
    [record] = bank.records()
    assert record["tool"] == "get_acount_balance" and record["valid"] is False


def test_prefixed_tool_name_is_unknown_but_pointed_at_the_real_one(bank: Bank) -> None:
    reply = bank.run("call", "bank__transfer_funds", json.dumps(VALID_TRANSFER)).json()
    assert reply["details"][0] == "did you mean: transfer_funds?"


@pytest.mark.parametrize("raw", ['{"account_number": "1",', "{'a': 1}", "NaN", ""])
def test_bad_json_is_rejected_and_kept_verbatim(bank: Bank, raw: str) -> None:
    result = bank.run("call", "get_account_balance", raw)
    assert result.returncode == 2
    reply = result.json()
    assert reply["error"] == "arguments are not valid JSON"
    assert "bank call get_account_balance '{" in reply["details"][-1]
    [record] = bank.records()
    assert record["arguments"] == raw and record["valid"] is False


@pytest.mark.parametrize("arguments", [[1, 2], "savings", 5, None, True])
def test_non_object_arguments_are_rejected(bank: Bank, arguments: object) -> None:
    result = bank.run("call", "get_account_balance", json.dumps(arguments))
    assert result.returncode == 2
    assert result.json()["error"] == "arguments must be a JSON object"
    [record] = bank.records()
    assert record["arguments"] == arguments and record["valid"] is False


def test_json_split_by_the_shell_is_rejoined(bank: Bank) -> None:
    # `bank call get_account_balance {"account_number": "1", ...}` without quotes, as bash splits it
    words = ['{"account_number":', '"00123",', '"account_type":', '"savings"}']
    assert bank.run("call", "get_account_balance", *words).returncode == 0
    unquoted = ["{account_number:", "00123}"]  # bash also ate the double quotes
    result = bank.run("call", "get_account_balance", *unquoted)
    assert result.returncode == 2
    assert result.json()["error"] == "arguments are not valid JSON"
    assert [r["arguments"] for r in bank.records()] == [VALID_BALANCE, "{account_number: 00123}"]


def test_arguments_can_come_from_stdin(bank: Bank) -> None:
    result = bank.run("call", "get_account_balance", "-", stdin=json.dumps(VALID_BALANCE))
    assert result.returncode == 0
    assert bank.records()[0]["arguments"] == VALID_BALANCE


def test_omitted_arguments_mean_an_empty_object(bank: Bank) -> None:
    result = bank.run("call", "get_account_balance")
    assert result.returncode == 2
    assert len(result.json()["details"]) == 2  # both required properties missing
    assert bank.records()[0]["arguments"] == {}


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["withdraw"],
        ["call"],
        ["call", "transfer_funds", "{}", "--attempt", "0"],
        ["call", "transfer_funds", "{}", "--attempt", "two"],
        ["call", "transfer_funds", "{}", "--attempt"],
        ["accept"],
        ["accept", "0"],
        ["accept", "1", "2"],
        ["tools", "all"],
    ],
)
def test_usage_errors_exit_64_and_record_nothing(bank: Bank, argv: list[str]) -> None:
    result = bank.run(*argv)
    assert result.returncode == 64
    assert result.stderr.startswith("bank: ") and "usage: bank" in result.stderr
    assert not bank.intents.exists()


def test_bad_attempt_env_is_a_usage_error(bank: Bank) -> None:
    result = bank.run("call", "transfer_funds", "{}", BANK_ATTEMPT="first")
    assert result.returncode == 64 and "BANK_ATTEMPT" in result.stderr


def test_accept_appends_a_line_without_seq(bank: Bank) -> None:
    bank.run("call", "get_account_balance", json.dumps(VALID_BALANCE))
    result = bank.run("accept", "2")
    assert result.returncode == 0 and result.json() == {"accepted": 2}
    bank.run("call", "get_account_balance", json.dumps(VALID_BALANCE))
    first, accept, second = bank.records()
    assert set(accept) == {"accept", "ts"} and accept["accept"] == 2
    assert (first["seq"], second["seq"]) == (1, 2)


def test_huge_arguments_are_truncated_in_the_record(bank: Bank) -> None:
    arguments = dict(VALID_TRANSFER, tags=["x" * 1000] * 40)
    result = bank.run("call", "transfer_funds", json.dumps(arguments))
    assert result.returncode == 0  # validated in full, only the record is bounded
    [record] = bank.records()
    assert record["arguments_truncated"] is True
    assert record["arguments_bytes"] == len(json.dumps(arguments).encode())
    assert isinstance(record["arguments"], str)
    assert len(record["arguments"].encode()) <= 16 * 1024
    assert record["valid"] is True


def test_torn_last_line_does_not_swallow_the_next_record(bank: Bank) -> None:
    bank.intents.parent.mkdir(parents=True)
    bank.intents.write_text(
        '{"seq": 5, "attempt": 1, "tool": "x", "arguments": {}, "valid": false, "errors": [],'
        ' "ts": 1.0}\n{"seq": 6, "attempt": 1, "tool": "trans'
    )
    assert bank.run("call", "get_account_balance", json.dumps(VALID_BALANCE)).returncode == 0
    lines = bank.intents.read_text().splitlines()
    assert len(lines) == 3
    assert json.loads(lines[-1])["seq"] == 6  # seq continues from the last readable call


def test_bare_function_entries_are_understood(bank: Bank, tmp_path: Path) -> None:
    bank.bank_dir = tmp_path / "app"
    bank.bank_dir.mkdir()
    tools = json.loads((FIXTURES / "tools.json").read_text())
    bare = [tool["function"] for tool in tools] + ["junk", {"function": "junk"}]
    (bank.bank_dir / "tools.json").write_text(json.dumps(bare))
    assert bank.run("call", "get_account_balance", json.dumps(VALID_BALANCE)).returncode == 0
    assert bank.run("call", "get_account_balance", "{}").returncode == 2


def test_missing_tool_schemas_exit_78_but_keep_the_call(bank: Bank, tmp_path: Path) -> None:
    bank.bank_dir = tmp_path / "empty"
    bank.bank_dir.mkdir()
    result = bank.run("call", "get_account_balance", json.dumps(VALID_BALANCE))
    assert result.returncode == 78
    assert "tools.json" in result.stderr
    [record] = bank.records()
    assert record["valid"] is False and "bank misconfigured" in record["errors"][0]
    assert bank.run("tools").returncode == 78


def test_unwritable_intents_log_exits_74(bank: Bank, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    bank.intents = blocker / "intents.jsonl"
    result = bank.run("call", "get_account_balance", json.dumps(VALID_BALANCE))
    assert result.returncode == 74
    assert "cannot write the intents log" in result.stderr


def test_shell_text_in_arguments_is_data_only(bank: Bank, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    arguments = {
        "account_number": f"$(touch {marker}); `touch {marker}`",
        "account_type": "savings",
    }
    assert bank.run("call", "get_account_balance", json.dumps(arguments)).returncode == 0
    assert not marker.exists()
    assert bank.records()[0]["arguments"] == arguments


def test_python_style_type_names_are_understood(bank: Bank) -> None:
    ok = bank.run("call", "list_recent_transactions", '{"account_number": "1", "limit": 5}')
    assert ok.returncode == 0
    bad = bank.run("call", "list_recent_transactions", '{"account_number": "1", "limit": "5"}')
    assert bad.returncode == 2
    assert "arguments.limit: expected integer, got string" in bad.json()["details"][0]


def test_double_encoded_arguments_get_a_hint(bank: Bank) -> None:
    reply = bank.run("call", "get_account_balance", json.dumps(json.dumps(VALID_BALANCE))).json()
    assert reply["error"] == "arguments must be a JSON object"
    assert "JSON-encoded twice" in reply["details"][-1]


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        ('{"a": ' + "[" * 70 + "]" * 70 + "}", "arguments nested too deeply"),
        ("[" * 100_000, "arguments are not valid JSON"),
    ],
)
def test_absurdly_nested_arguments_are_rejected(bank: Bank, raw: str, error: str) -> None:
    result = bank.run("call", "get_account_balance", raw)
    assert result.returncode == 2
    assert result.json()["error"] == error
    assert bank.records()[0]["valid"] is False


def test_error_messages_are_bounded(bank: Bank) -> None:
    arguments = dict(VALID_BALANCE, **{"x" * 5000: 1})
    reply = bank.run("call", "get_account_balance", json.dumps(arguments)).json()
    assert len(reply["details"]) == 1 and len(reply["details"][0]) <= 503
    arguments = dict(VALID_TRANSFER, tags=list(range(200)))
    reply = bank.run("call", "transfer_funds", json.dumps(arguments)).json()
    assert reply["error"] == "invalid arguments for transfer_funds (200 problems)"
    assert len(reply["details"]) == 51 and reply["details"][-1] == "... and 150 more errors"


def test_undecodable_command_line_bytes_still_give_parseable_lines(bank: Bank) -> None:
    done = subprocess.run(
        [bank.python, str(BANK_SCRIPT), "call", b"get_\xff", b'{"account_number": "\xfe"}'],
        capture_output=True,
        env=bank.env(),
        timeout=60,
    )
    assert done.returncode == 2
    assert json.loads(done.stdout)["error"].startswith("unknown tool")
    [record] = bank.records()  # the line is valid UTF-8 JSON; the bytes stay as escapes
    assert record["tool"] == "get_\udcff"


def test_the_log_takes_a_bounded_number_of_lines(bank: Bank) -> None:
    """Past MAX_LOG_LINES nothing more is recorded (so scoring the log stays bounded): the
    call is refused, not recorded, and says why; the lines before are untouched."""
    from contracts.intents import MAX_LOG_LINES

    line = json.dumps({"seq": 1, "attempt": 1, "turn": 0, "tool": "x", "arguments": {},
                       "valid": False, "errors": ["x"], "ts": 1.0}) + "\n"
    bank.intents.parent.mkdir(parents=True, exist_ok=True)
    bank.intents.write_text(line * (MAX_LOG_LINES - 1))
    assert bank.run("call", "get_account_balance", json.dumps(VALID_BALANCE)).returncode == 0
    before = bank.intents.read_bytes()
    for args in (("call", "get_account_balance", json.dumps(VALID_BALANCE)), ("accept", "1")):
        refused = bank.run(*args)
        assert refused.returncode == 2 and "most lines" in refused.stderr, refused.stderr
    assert bank.intents.read_bytes() == before
