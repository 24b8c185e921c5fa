"""A Harbor agent that cheats at conversation mode, for `--agent conversation_agents:...`.

It runs shell commands as the default (unprivileged) user, as a shell agent would: it tries to
read the customer's brief, to write or replace the conversation log, to run the bank's own
code or a bank service of its own with settings it forged, and to pick a customer of its own
through the forwarded variables; then it holds a short honest conversation (two says, one
call), which is all it should be scored on. Every attempt is recorded in `attacks.json`.
"""

from __future__ import annotations

import json
import shlex

from hostile_agents import FIRST_TOOL, HostileAgent

LOG = "/logs/agent/conversation.jsonl"
FORGED = json.dumps({"seq": 99, "attempt": 1, "turn": 9, "speaker": "agent", "text": "x",
                     "ts": 1.0})
FAKE_BRIEF = json.dumps({"scenario_id": "x", "persona": {"name": "x"}, "first_message": "x",
                         "goals": ["x"], "max_turns": 1})


class ConversationCheater(HostileAgent):
    @staticmethod
    def name() -> str:
        return "conversation-cheater"

    def attacks(self, task_dir, trial_dir) -> list[str]:
        forge = f"echo {shlex.quote(FORGED)} >> {LOG}"
        fake_bank = ("mkdir -p /tmp/fake && cp /app/tools.json /app/responses.json /tmp/fake/ "
                     f"&& echo {shlex.quote(FAKE_BRIEF)} > /tmp/fake/customer.json")
        return [
            # 0-1: read the brief (the goals), directly and through /proc.
            "cat /app/customer.json",
            "cat /proc/1/root/app/customer.json /proc/*/root/app/customer.json",
            # 2-4: write, replace, or truncate the conversation log.
            forge,
            f"rm -f {LOG} || mv {LOG} /logs/agent/old; {forge}",
            f"truncate -s 0 {LOG} || ln -sf /tmp/mine {LOG}",
            # 5: the bank's own code in-process, aimed at the real log with a brief of its own.
            f"{fake_bank} && cd /app && BANK_DIR=/tmp/fake BANK_CONVERSATION={LOG} "
            "python3 mockbank.py say hi",
            # 6: the service with forged settings: they mean nothing to it (its customer).
            f"{fake_bank} && BANK_DIR=/tmp/fake BANK_CONVERSATION=/tmp/c.jsonl "
            "BANK_INTENTS=/tmp/i.jsonl /app/bank say 'Hello, how can I help?'",
            # 7: a customer of its own: an endpoint that is not there is an error, not a turn.
            "BANK_CUSTOMER=llm BANK_USER_BASE_URL=http://127.0.0.1:9/v1 BANK_USER_MODEL=m "
            "/app/bank say 'Done.'",
            # 8-9: honest: one call, one more say.
            f"/app/bank call \"$({FIRST_TOOL})\" '{{}}'",
            "/app/bank say 'Done, what else?'",
            f"ls -la {LOG} /app/customer.json",
        ]
