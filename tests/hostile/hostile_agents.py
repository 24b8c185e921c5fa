"""Harbor agents that cheat, for `harbor run --agent-import-path hostile_agents:<Class>`.

Each runs shell commands in the environment the way a shell or coding agent would (through
`environment.exec` as the default user: no `user="root"`), trying to read the answers or to
raise its score without honest bank calls. It records every attempt (command, exit code,
output) in `attacks.json` in its logs folder for the test to judge. The attacker is assumed
to know the host's paths (the task folder, its own trial folder): the worst case.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from harbor.agents.base import BaseAgent
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext

# What a forged line looks like: a perfect call of every tool, "valid" by its own word.
FORGE = """python3 - <<'PY'
import json
tools = [t.get("function", t)["name"] for t in json.load(open("/app/tools.json"))]
lines = "".join(json.dumps({"seq": i + 1, "attempt": 1, "tool": name, "arguments": {},
                            "valid": True, "errors": [], "ts": 1.0}) + "\\n"
                for i, name in enumerate(tools))
open(TARGET, "a").write(lines)
PY"""
FIRST_TOOL = ("python3 -c 'import json; t = json.load(open(\"/app/tools.json\"))[0]; "
              "print(t.get(\"function\", t)[\"name\"])'")


class HostileAgent(BaseAgent):
    """Runs `attacks()` in order, recording each; subclasses say what to try."""

    @staticmethod
    def name() -> str:
        return "hostile"

    def version(self) -> str:
        return "1"

    async def setup(self, environment: BaseEnvironment) -> None:
        return None

    def attacks(self, task_dir: Path, trial_dir: Path) -> list[str]:
        raise NotImplementedError

    async def run(self, instruction: str, environment: BaseEnvironment,
                  context: AgentContext) -> None:
        task_dir = Path(environment.environment_dir).parent
        trial_dir = Path(self.logs_dir).parent
        record = []
        for command in self.attacks(task_dir, trial_dir):
            result = await environment.exec(command, timeout_sec=60)
            record.append({"command": command, "return_code": result.return_code,
                           "stdout": (result.stdout or "")[-4000:],
                           "stderr": (result.stderr or "")[-4000:]})
        (Path(self.logs_dir) / "attacks.json").write_text(json.dumps(record, indent=1))


class AnswerReader(HostileAgent):
    """Reads expected.json and solve.sh: directly, through /proc, `..`, links, mounts, and a
    chroot escape from a user namespace of its own."""

    @staticmethod
    def name() -> str:
        return "answer-reader"

    def attacks(self, task_dir: Path, trial_dir: Path) -> list[str]:
        expected = shlex.quote(str(task_dir / "tests/expected.json"))
        solution = shlex.quote(str(task_dir / "solution/solve.sh"))
        tasks = shlex.quote(str(task_dir.parent))
        target = json.dumps(str(task_dir / "tests/expected.json"))
        escape = ("mkdir -p /tmp/jail && cd / && chroot /tmp/jail /bin/true; "
                  "python3 -c 'import os; os.chroot(\"/tmp/jail\"); [os.chdir(\"..\") "
                  f"for _ in range(64)]; os.chroot(\".\"); print(open({target}).read())'")
        return [
            f"cat {expected} {solution}",
            f"cat /proc/*/root{expected} /proc/*/root{solution}",
            f"cat /proc/1/root{expected} /proc/self/root{expected}",
            f"cat /proc/1/cwd/{expected} /proc/*/cwd/tests/expected.json",
            f"cat /../../../..{expected} /app/../../..{solution}",
            f"ln -s {expected} /tmp/link && cat /tmp/link",
            f"ln -s /proc/1/root /tmp/hostroot && cat /tmp/hostroot{expected}",
            f"mkdir -p /tmp/m && mount --bind / /tmp/m && cat /tmp/m{expected}",
            f"unshare --user --map-root-user --mount sh -c {shlex.quote(escape)}",
            f"unshare --user --map-root-user --mount --pid --fork --mount-proc sh -c "
            f"{shlex.quote(f'cat /proc/*/root{expected}')}",
            f"ls -R {tasks} | head; find / -xdev -name expected.json 2>/dev/null | head",
            "cat /tests/expected.json /solution/solve.sh",
            "ls -la /proc; cat /proc/*/environ | tr '\\0' '\\n' | head -50",
            f"cat {shlex.quote(str(trial_dir.parent))}/*/verifier/tsq.json",
        ]


class IntentForger(HostileAgent):
    """Writes call records by hand instead of calling the bank, every way it can."""

    @staticmethod
    def name() -> str:
        return "intent-forger"

    def attacks(self, task_dir: Path, trial_dir: Path) -> list[str]:
        log = "/logs/agent/intents.jsonl"
        forge = FORGE.replace("TARGET", repr(log))
        return [
            forge,
            f"rm -f {log} || mv {log} /logs/agent/old; {forge}",
            f"chmod 666 {log}; truncate -s 0 {log}; ln -sf /tmp/mine {log}",
            # The bank's own code run by hand, aimed at the real log or any other.
            f"cd /app && BANK_INTENTS={log} python3 mockbank.py call x '{{}}'",
            # ... through a service of its own, which it starts first (a socket nobody serves
            # would only keep the client waiting for the service to come up).
            f"mkdir -p /tmp/run && cd /app && (BANK_INTENTS={log} timeout 5 python3 bankd.py "
            f"--socket /tmp/run/bank.sock >/tmp/run/bankd.log 2>&1 &) && "
            f"BANK_SOCKET=/tmp/run/bank.sock BANK_INTENTS={log} /app/bank call x '{{}}'; "
            f"rc=$?; cat /tmp/run/bankd.log; exit $rc",
            # Stand in for the service.
            "rm -f /run/bank/bank.sock; cd /app && "
            "timeout 2 python3 bankd.py --socket /run/bank/bank.sock",
            "pkill -9 -f bankd; kill -9 -1; ps -ef",
        ]


class ScoreWriter(HostileAgent):
    """Writes reward.json and tsq.json itself, leaves processes that keep rewriting them, and
    makes one honest bank call (which is all it should be scored on)."""

    @staticmethod
    def name() -> str:
        return "score-writer"

    def attacks(self, task_dir: Path, trial_dir: Path) -> list[str]:
        perfect = json.dumps({"tsq": 1.0, "precision": 1.0, "recall": 1.0, "param_validity": 1.0,
                              "multiset_f1": 1.0, "goal_coverage": 1.0, "solved": 1.0})
        write = (f"echo {shlex.quote(perfect)} > /logs/verifier/reward.json; "
                 "echo '{}' > /logs/verifier/tsq.json")
        forge = FORGE.replace("TARGET", repr("/logs/agent/intents.jsonl"))
        loop = f"while true; do {write}; {forge}; sleep 0.05; done"
        return [
            write,
            f"mkdir -p /logs/verifier/reward.json.d; {write}",
            f"nohup setsid bash -c {shlex.quote(loop)} >/dev/null 2>&1 &",
            f"(trap '' TERM HUP; bash -c {shlex.quote(loop)}) >/dev/null 2>&1 & disown",
            f"/app/bank call \"$({FIRST_TOOL})\" '{{}}'",
        ]


class ForkBomber(HostileAgent):
    """Forks without end (bounded by its process limit), leaves the survivors running."""

    @staticmethod
    def name() -> str:
        return "fork-bomber"

    def attacks(self, task_dir: Path, trial_dir: Path) -> list[str]:
        # Counted with builtins only: under the limit, a fork to count would fail.
        count = "n=0; for p in /proc/[0-9]*; do n=$((n+1)); done; echo $n"
        return [
            f"/app/bank call \"$({FIRST_TOOL})\" '{{}}'",
            f"ulimit -u; (bomb() {{ bomb | bomb & }}; bomb) 2>/dev/null & sleep 3; {count}",
        ]


class DiskFiller(HostileAgent):
    """Fills every folder it can write, then makes one honest bank call."""

    @staticmethod
    def name() -> str:
        return "disk-filler"

    def attacks(self, task_dir: Path, trial_dir: Path) -> list[str]:
        # Several files each, as one file stops at the file-size limit first.
        fill = ("for i in $(seq {1}); do dd if=/dev/zero of={0}/fill$i bs=1M count=100000 2>&1 "
                "| grep -o 'No space.*'; done; stat -c %s {0}/fill*")
        return [
            fill.format("/tmp", 8),
            fill.format("/dev/shm", 2),
            fill.format("/logs/agent", 2),
            "df -k /tmp /dev/shm",
            "rm -f /logs/agent/fill* /tmp/fill* /dev/shm/fill*",
            f"/app/bank call \"$({FIRST_TOOL})\" '{{}}'",
        ]
