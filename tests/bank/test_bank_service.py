"""The bank as a service (bankd.py): `/app/bank` hands its command line over a Unix socket and
gets the same reply, exit code and log line the in-process bank gives; only the service's own
settings decide where the log goes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.bank_harness import BANK_SCRIPT, FIXTURES, Bank

SERVICE = BANK_SCRIPT.with_name("bankd.py")
CALLS = [
    ("tools",),
    ("call", "get_account_balance", '{"account_number": "1", "account_type": "savings"}'),
    ("call", "get_account_balance", "{}"),
    ("call", "Get-Account-Balance", "{}"),
    ("call", "transfer_funds", "not json"),
    ("call", "get_account_balance", "--attempt", "2", '{"account_number": "1"}'),
    ("accept", "2"),
    ("accept", "zero"),
    ("nonsense",),
]


@pytest.fixture
def service(tmp_path: Path, python: str) -> Iterator[tuple[Path, Path]]:
    """A running service on its own socket and log: (socket, log)."""
    sock, log = tmp_path / "run" / "bank.sock", tmp_path / "service" / "intents.jsonl"
    env = {**os.environ, "BANK_SOCKET": str(sock), "BANK_DIR": str(FIXTURES),
           "BANK_INTENTS": str(log)}
    process = subprocess.Popen([python, str(SERVICE)], env=env, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 20
    while not sock.exists():
        assert process.poll() is None and time.monotonic() < deadline, process.stderr
        time.sleep(0.02)
    yield sock, log
    process.kill()
    process.wait()


def without_ts(path: Path) -> list[dict]:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return [{k: v for k, v in line.items() if k != "ts"} for line in lines]


def test_service_answers_exactly_as_the_bank_in_process(bank: Bank, service, tmp_path) -> None:
    sock, log = service
    decoy = tmp_path / "decoy" / "intents.jsonl"
    for argv in CALLS:
        here = bank.run(*argv)
        # The caller's BANK_INTENTS and BANK_DIR mean nothing to the service.
        served = bank.run(*argv, BANK_SOCKET=str(sock), BANK_INTENTS=str(decoy),
                          BANK_DIR=str(tmp_path))
        assert (served.returncode, served.stdout, served.stderr) == (
            here.returncode, here.stdout, here.stderr), argv
    assert without_ts(log) == without_ts(bank.intents)
    assert not decoy.exists()


def test_arguments_on_stdin_and_the_attempt_variable_reach_the_service(bank: Bank,
                                                                       service) -> None:
    sock, log = service
    arguments = '{"account_number": "7", "account_type": "checking"}'
    done = bank.run("call", "get_account_balance", "-", stdin=arguments, BANK_SOCKET=str(sock),
                    BANK_ATTEMPT="3")
    assert done.returncode == 0, done.stderr
    [record] = without_ts(log)
    assert record["attempt"] == 3 and record["arguments"] == json.loads(arguments)


def raw_request(sock: Path, data: bytes) -> dict:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.connect(str(sock))
        try:
            client.sendall(data)
            client.shutdown(socket.SHUT_WR)
        except BrokenPipeError:
            pass  # refused before it was all sent: the reply is still there to read
        return json.loads(client.makefile("rb").read())


def test_malformed_requests_are_refused_and_recorded_nowhere(service) -> None:
    sock, log = service
    for data in (b"not json\n", b'{"argv": "call x"}\n', b'{"argv": ["call", 1]}\n',
                 b'{"argv": [], "stdin": 3}\n', b"[" * 100_000 + b"\n"):
        reply = raw_request(sock, data)
        assert reply["code"] == 64 and "bad request" in reply["err"], data[:40]
    too_big = raw_request(sock, b'{"argv": ["call", "x", "' + b"a" * (1 << 21) + b'"]}\n')
    assert too_big["code"] == 64 and "larger than" in too_big["err"]
    assert not log.exists()
