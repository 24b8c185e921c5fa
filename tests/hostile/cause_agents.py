"""Harbor agents that try to make their own bad trial leave the quality figures, or to break
the job, through what an agent controls: its exit code and printed text, what it reports to
Harbor, the exceptions it raises, the files it leaves in its logs and the output of its
commands. For `harbor run` with `--agent-import-path cause_agents:<Class>`.

Each makes one honest bank call first (which is all it should be scored on), then does its
one thing. Installed agents (`BaseInstalledAgent`) run their commands the way Harbor's own
installed agents do, so Harbor turns their exit code and output into its exceptions.
"""

from __future__ import annotations

import asyncio
import json
import shlex
from pathlib import Path

from escape_agents import HONEST_CALL, LOG_ENTRIES
from harbor.agents.installed.base import BaseInstalledAgent
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext
from hostile_agents import HostileAgent


class _Installed(BaseInstalledAgent):
    """An installed agent with nothing to install whose run is one shell script."""

    SCRIPT = ""

    def version(self) -> str:
        return "1"

    async def install(self, environment: BaseEnvironment) -> None:
        return None

    async def run(self, instruction: str, environment: BaseEnvironment,
                  context: AgentContext) -> None:
        await self.exec_as_agent(environment, f"{HONEST_CALL}; {self.SCRIPT}")


class ExitNonZero(_Installed):
    """Exits 3 after its call (Harbor: NonZeroAgentExitCodeError)."""

    SCRIPT = "exit 3"

    @staticmethod
    def name() -> str:
        return "exit-nonzero"


class ExitBlamingTheNetwork(_Installed):
    """Prints what a failed connection prints, then exits non-zero (Harbor: one of its
    model-provider errors, read from that text)."""

    SCRIPT = ("echo 'curl: (7) Failed to connect to api port 443: Connection refused' >&2; "
              "echo 'Error: rate limit exceeded (429)' >&2; exit 7")

    @staticmethod
    def name() -> str:
        return "exit-blaming-network"


class KilledByItsTool(_Installed):
    """Its tool kills the agent's own shell (`kill -9 $PPID`)."""

    SCRIPT = "bash -c 'kill -9 $PPID'"

    @staticmethod
    def name() -> str:
        return "killed-by-tool"


class StatusClaimer(HostileAgent):
    """Reports to Harbor, in its own process, the status the project's agent uses for a
    server failure."""

    @staticmethod
    def name() -> str:
        return "status-claimer"

    def attacks(self, task_dir: Path, trial_dir: Path) -> list[str]:
        return [HONEST_CALL]

    async def run(self, instruction: str, environment: BaseEnvironment,
                  context: AgentContext) -> None:
        await super().run(instruction, environment, context)
        context.metadata = {"status": "infra_error", "attempts": 1,
                            "status_reason": "LLM request failed after 4 tries: 503 (claimed)"}


class RateLimitError(Exception):
    """Named as litellm's: Harbor's error policy calls that a model-provider failure."""


class ProviderNamedRaiser(HostileAgent):
    """Raises an exception named like a server failure after its call."""

    @staticmethod
    def name() -> str:
        return "provider-named-raiser"

    def attacks(self, task_dir: Path, trial_dir: Path) -> list[str]:
        return [HONEST_CALL]

    async def run(self, instruction: str, environment: BaseEnvironment,
                  context: AgentContext) -> None:
        await super().run(instruction, environment, context)
        raise RateLimitError("the provider is overloaded (claimed)")


class SetupFailer(HostileAgent):
    """Makes its call in setup, then fails its own setup."""

    @staticmethod
    def name() -> str:
        return "setup-failer"

    async def setup(self, environment: BaseEnvironment) -> None:
        await environment.exec(HONEST_CALL, timeout_sec=60)
        raise RuntimeError("could not install the agent (claimed)")

    def attacks(self, task_dir: Path, trial_dir: Path) -> list[str]:
        return []


def call_record(**fields: object) -> dict[str, object]:
    """A call record of the agent's own making, valid but for `fields`."""
    return {"request_id": "r", "trial_name": "t", "scenario_id": "banking-002", "attempt": 1,
            "step": 1, "role": "agent", "model": "m", "start_unix_ns": 1_700_000_000_000_000_000,
            "send_ns": 1_000, "read_ns": [2_000, 3_000], "read_content_chars": [1, 1],
            "end_ns": 4_000, **fields}


# Raw JSON lines: Python's json writes 10**29 and 10**400 as the integers they are.
OVERFLOWING_LINES = [
    json.dumps(call_record(request_id="ok")),
    json.dumps(call_record(request_id="int64", read_ns=[10**29])),
    json.dumps(call_record(request_id="ttft", send_ns=None, read_ns=[], read_content_chars=[],
                           end_ns=None, ttft_ms=1e308, e2e_ms=1e308)),
    json.dumps(call_record(request_id="server", server={"timing": {"ttft_ms": 10**400}})),
    json.dumps(call_record(request_id="tokens", prompt_tokens=10**20, completion_tokens=-5)),
    json.dumps(call_record(request_id="clock", start_unix_ns=2**63 - 1, end_ns=2**63 - 1,
                           send_ns=-(2**63))),
    json.dumps(call_record(request_id="nan")).replace('"end_ns": 4000', '"end_ns": NaN'),
]


class CallLogOverflower(HostileAgent):
    """Leaves a call log whose numbers overflow int64, float and every derived figure."""

    @staticmethod
    def name() -> str:
        return "call-log-overflower"

    def attacks(self, task_dir: Path, trial_dir: Path) -> list[str]:
        lines = "".join(line + "\n" for line in OVERFLOWING_LINES)
        return [HONEST_CALL,
                f"printf %s {shlex.quote(lines)} > /logs/agent/llm_calls.jsonl"]


class TrajectoryBreaker(HostileAgent):
    """Leaves 3 bytes that are not UTF-8 where Harbor reads the trajectory on the host, and
    the same under the other names Harbor reads there."""

    @staticmethod
    def name() -> str:
        return "trajectory-breaker"

    def attacks(self, task_dir: Path, trial_dir: Path) -> list[str]:
        return [HONEST_CALL,
                r"printf '\xff\xfe{' > /logs/agent/trajectory.json",
                r"mkdir -p /logs/artifacts && printf '\xff\xfe[' > /logs/artifacts/manifest.json"]


class OutputFlooder(HostileAgent):
    """Leaves writers on its commands' output after each command returns (each output as
    large as the file-size limit lets it grow), and prints more than anyone would read:
    unbounded output must cost neither the host nor another trial."""

    @staticmethod
    def name() -> str:
        return "output-flooder"

    def attacks(self, task_dir: Path, trial_dir: Path) -> list[str]:
        # Writers that keep the command's stdout and stderr (no redirection of their own).
        writers = ("(while :; do head -c 16777216 /dev/zero; done) & "
                   "(while :; do head -c 16777216 /dev/zero >&2; done) & echo bg")
        return [
            HONEST_CALL,
            *[writers] * WRITER_COMMANDS,
            "head -c 104857600 /dev/zero | tr '\\0' x",
            # The writers keep going while the honest trials beside it run.
            f"sleep {FLOOD_SECONDS}; echo still-here",
        ]


WRITER_COMMANDS = 6
# Long enough for the patient honest trial's call and the next trials' starts to fall inside
# the flood; every second of it keeps the writers forking on the host's cores.
FLOOD_SECONDS = 8


class PatientHonest(HostileAgent):
    """Not hostile: waits a few seconds, then makes the honest call, so that it runs while
    the flooder's writers write."""

    @staticmethod
    def name() -> str:
        return "patient-honest"

    def attacks(self, task_dir: Path, trial_dir: Path) -> list[str]:
        return [HONEST_CALL]

    async def run(self, instruction: str, environment: BaseEnvironment,
                  context: AgentContext) -> None:
        await asyncio.sleep(PATIENCE_SECONDS)
        await super().run(instruction, environment, context)


PATIENCE_SECONDS = 3


class NameMangler(HostileAgent):
    """Leaves, under a name that is not UTF-8, links, a FIFO, a socket and more files than a
    copy takes (1,500 over the job's LOG_ENTRIES bound), so the environment's note of what it
    left out has to say so."""

    @staticmethod
    def name() -> str:
        return "name-mangler"

    def attacks(self, task_dir: Path, trial_dir: Path) -> list[str]:
        many = ("python3 -c 'import os\nos.makedirs(b\"/logs/agent/m\\xffny\")\n"
                f"for i in range({LOG_ENTRIES + 1500}):\n"
                "    open(b\"/logs/agent/m\\xffny/%d\" % i, \"w\").close()'")
        sock = ("python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); "
                "s.bind(b\"/logs/agent/s\\xffck\")'")
        return [
            HONEST_CALL,
            "ln -s / /logs/agent/$'\\xff'link && mkfifo /logs/agent/$'\\xfe'fifo",
            sock,
            many,
        ]


INSTALLED = ("ExitNonZero", "ExitBlamingTheNetwork", "KilledByItsTool")
IN_PROCESS = ("StatusClaimer", "ProviderNamedRaiser", "SetupFailer")
FILES = ("CallLogOverflower", "TrajectoryBreaker", "NameMangler")
OUTPUT = ("OutputFlooder",)
ALL = (*OUTPUT, *INSTALLED, *IN_PROCESS, *FILES)
