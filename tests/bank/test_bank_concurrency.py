"""Parallel `bank call` processes in one trial: one line each, unique gap-free seq."""

from __future__ import annotations

import json
import subprocess

from tests.support.bank_harness import BANK_SCRIPT, Bank

N_CALLS = 20


def start_calls(bank: Bank, n: int) -> list[subprocess.Popen]:
    env = bank.env()
    return [
        subprocess.Popen(
            [
                bank.python,
                str(BANK_SCRIPT),
                "call",
                "list_recent_transactions",
                json.dumps({"account_number": f"acct-{i}", "days": 30}),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        for i in range(n)
    ]


def test_concurrent_calls_get_unique_seq_and_whole_lines(bank: Bank) -> None:
    env = bank.env()
    processes = start_calls(bank, N_CALLS)
    accepts = [
        subprocess.Popen(
            [bank.python, str(BANK_SCRIPT), "accept", "1"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        for _ in range(3)
    ]
    for process in processes + accepts:
        process.communicate(timeout=60)
        assert process.returncode == 0

    lines = bank.intents.read_text().splitlines()
    assert len(lines) == N_CALLS + len(accepts)
    records = [json.loads(line) for line in lines]  # every line whole and parseable
    calls = [r for r in records if "seq" in r]
    assert sorted(r["seq"] for r in calls) == list(range(1, N_CALLS + 1))
    assert [r["seq"] for r in calls] == sorted(r["seq"] for r in calls)  # file order = seq order
    assert {r["arguments"]["account_number"] for r in calls} == {
        f"acct-{i}" for i in range(N_CALLS)
    }
    assert sum(1 for r in records if r.get("accept") == 1) == len(accepts)


def test_seq_stays_unique_when_the_log_is_slow_to_read(bank: Bank) -> None:
    # A large log makes the read-then-append window long; without the lock every process
    # would read the same last seq (seen without it: all 20 calls got one seq).
    prior = 4000
    bank.intents.parent.mkdir(parents=True)
    with bank.intents.open("w") as log:
        for seq in range(1, prior + 1):
            record = {
                "seq": seq,
                "attempt": 1,
                "tool": "x",
                "arguments": {"pad": "p" * 1000},
                "valid": True,
                "errors": [],
                "ts": 1.0,
            }
            log.write(json.dumps(record) + "\n")
    for process in start_calls(bank, N_CALLS):
        process.communicate(timeout=60)
        assert process.returncode == 0
    new = [json.loads(line)["seq"] for line in bank.intents.read_text().splitlines()[prior:]]
    assert new == list(range(prior + 1, prior + N_CALLS + 1))
