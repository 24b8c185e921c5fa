"""Harbor agents that try to outlast, out-link or out-write the trial, for
`harbor run --agent-import-path escape_agents:<Class>`.

Like hostile_agents.py they only run shell commands as the default user. Each leaves something
behind when its run ends (a process in namespaces of its own, links, swapped folders, a tree too
deep to copy, a status of its own) and makes one honest bank call, which is all it should be
scored on.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from hostile_agents import FIRST_TOOL, FORGE, HostileAgent

HONEST_CALL = f"/app/bank call \"$({FIRST_TOOL})\" '{{}}'"
PERFECT = json.dumps({"tsq": 1.0, "precision": 1.0, "recall": 1.0, "param_validity": 1.0,
                      "multiset_f1": 1.0, "goal_coverage": 1.0, "solved": 1.0})


def background(script: str) -> str:
    """`script` left running after the command returns, detached from it."""
    return f"nohup setsid bash -c {shlex.quote(script)} >/dev/null 2>&1 &"


class NamespaceSurvivor(HostileAgent):
    """Leaves a loop inside user and PID namespaces of its own (out of reach of a sweep of the
    trial's PID namespace) that keeps writing a perfect reward, a heartbeat and forged calls
    wherever it can, through verification if it lives that long."""

    @staticmethod
    def name() -> str:
        return "namespace-survivor"

    def attacks(self, task_dir: Path, trial_dir: Path) -> list[str]:
        forge = FORGE.replace("TARGET", repr("/logs/agent/intents.jsonl"))
        loop = (f"while true; do echo {shlex.quote(PERFECT)} > /logs/verifier/reward.json; "
                "date +%s%N > /logs/verifier/survivor-heartbeat; "
                "date +%s%N >> /logs/agent/survivor-heartbeat; "
                f"{forge}\nsleep 0.05; done")
        nested = ("unshare --user --map-root-user --pid --fork "
                  f"bash -c {shlex.quote(loop)}")
        return [
            HONEST_CALL,
            background(nested),
            background(f"unshare --user --map-root-user bash -c {shlex.quote(loop)}"),
            "sleep 0.5; wc -l /logs/agent/survivor-heartbeat",
        ]


class LinkPlanter(HostileAgent):
    """Leaves links to the host's and other trials' files in its logs, one where Harbor reads
    its trajectory, and a swapper that keeps turning a listed folder into a link to `/`."""

    @staticmethod
    def name() -> str:
        return "link-planter"

    def attacks(self, task_dir: Path, trial_dir: Path) -> list[str]:
        swap = ("cd /logs/agent; while true; do rm -rf swap; ln -s / swap; sleep 0.01; "
                "rm -f swap; mkdir -p swap/etc; echo x > swap/etc/x; sleep 0.01; done")
        jobs = shlex.quote(str(trial_dir.parent))
        return [
            HONEST_CALL,
            "ln -s /dev/zero /logs/agent/trajectory.json",
            "ln -s / /logs/agent/root; ln -s /etc/passwd /logs/agent/passwd; "
            "ln -s /proc/1/root /logs/agent/init-root; ln -s ../../.. /logs/agent/up",
            f"ln -s {jobs} /logs/agent/jobs; ln -s {shlex.quote(str(task_dir))} "
            "/logs/agent/task; mkdir -p /logs/artifacts/a; ln -s / /logs/artifacts/a/root",
            "mkdir -p /logs/agent/deep/er; ln -s /etc /logs/agent/deep/er/etc",
            background(swap),
        ]


class TreeGrower(HostileAgent):
    """Grows a folder tree far deeper than a recursive copy or delete can walk, many files,
    and a file as large as it may write, in its logs."""

    @staticmethod
    def name() -> str:
        return "tree-grower"

    def attacks(self, task_dir: Path, trial_dir: Path) -> list[str]:
        deep = ("python3 -c 'import os\nos.chdir(\"/logs/agent\")\nfor _ in range(3000):\n"
                "    os.mkdir(\"d\"); os.chdir(\"d\")\nopen(\"bottom\", \"w\").write(\"x\")'")
        many = ("python3 -c 'import os\nos.makedirs(\"/logs/agent/many\")\n"
                f"for i in range({LOG_ENTRIES + 1500}):"
                "\n    open(f\"/logs/agent/many/{i}\", \"w\").close()'")
        return [
            HONEST_CALL,
            deep,
            many,
            "dd if=/dev/zero of=/logs/agent/big bs=1M count=15 2>&1 | tail -1",
        ]


# The bound the hostile jobs set on entries one log folder's copy takes (LocalEnvironment's
# max_log_entries): the tree grower and cause_agents' name mangler leave 1,500 files more. Its
# default, 20,000, would copy that many files first, up to half a minute a trial for the same
# note.
LOG_ENTRIES = 2000


class StatusForger(HostileAgent):
    """Writes the harness's files in its logs itself: a status that would take the trial out
    of the quality figures, and a call log."""

    @staticmethod
    def name() -> str:
        return "status-forger"

    def attacks(self, task_dir: Path, trial_dir: Path) -> list[str]:
        status = json.dumps({"status": "harness_error", "reason": "bank unavailable (forged)",
                             "attempts": 1})
        return [
            HONEST_CALL,
            f"echo {shlex.quote(status)} > /logs/agent/agent_status.json",
            "echo '{\"request_id\": \"forged\"}' > /logs/agent/llm_calls.jsonl",
        ]


class UploadSwapper(HostileAgent):
    """Leaves a forged intents log in a folder of its logs and a swapper that keeps turning
    that folder into a link to the real log's folder, so that Harbor's copy back into the trial
    (as root) would write the forgery over the bank's record."""

    @staticmethod
    def name() -> str:
        return "upload-swapper"

    def attacks(self, task_dir: Path, trial_dir: Path) -> list[str]:
        forge = FORGE.replace("TARGET", repr("/logs/agent/x/intents.jsonl"))
        keep = "cp /logs/agent/x/intents.jsonl /tmp/forged"
        swap = ("cd /logs/agent; while true; do rm -rf x; ln -s /logs/agent x; sleep 0.002; "
                "rm -f x; mkdir x; cp /tmp/forged x/intents.jsonl; sleep 0.002; done")
        return [
            HONEST_CALL,
            f"mkdir -p /logs/agent/x && {forge} && {keep}",
            background(swap),
        ]
