"""What the agent-server tests share with their stack fixture (tests/bankbench/agent_server/
conftest.py): the served stack's shape, its secret and limits, a free port."""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path

PREFIX = "as-"
SECRET = "sk-bankbench-agent-server-secret-0123456789"
KEY_ENV = "BANKBENCH_AGENT_SERVER_TEST_KEY"
LONG_TURNS = 5  # the slow scenario: one tool call per turn, for disconnects and parallel load
MAX_CONCURRENCY = 2


@dataclass
class Served:
    url: str
    out: Path
    tmp: Path  # the server's TMPDIR: where the private bank copies live
    scenarios: list[str]
    calls: dict[str, list[tuple[str, dict]]]
    answers: dict[str, str]
    log: Path
    tasks: Path
    base_url: str  # the LLM server's
    model: str


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
