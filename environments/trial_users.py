"""Who runs each of a trial's commands: root, the agent's own uid, or the verifier's.

Harbor's steps that ask for root get root; every other command of the agent phase runs as the
trial's own unprivileged uid (named users too: the image's accounts do not exist on the host);
once verification has begun, commands without a user run as root and a task's named verifier
user gets a uid of its own. Without root on the host everything runs as root of a user
namespace (there is no other user to switch to).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

# Each trial's agent user: a uid no account on the host has, fresh per trial, so its process
# limit is its own, no two trials' agents can touch each other's files, and ending every
# process of that uid ends the agent's and nobody else's. Even: the next uid is the trial's
# verifier user, when a task names one.
AGENT_UIDS = range(2_900_000_000, 2_900_000_000 + 2**24, 2)
ROOT_USERS = ("root", "0")


def is_root(user: str | int | None) -> bool:
    return user is not None and str(user) in ROOT_USERS


@dataclass
class TrialUsers:
    userns: bool  # no root on the host: commands run as root of a user namespace
    agent_uid: int = field(default_factory=lambda: random.SystemRandom().choice(AGENT_UIDS))
    verifying: bool = False
    warned: bool = False  # the user-namespace warning was given

    @property
    def verifier_uid(self) -> int:
        return self.agent_uid + 1

    def run_as(self, user: str | int | None) -> tuple[int | None, str | None]:
        """(uid the command runs as, None for root; a warning to log once, if any)."""
        if (user is None and self.verifying) or is_root(user):
            return None, None
        if self.userns:
            if user is None or self.warned:
                return None, None
            self.warned = True
            return None, (f"LocalEnvironment runs user {user!r}'s commands as root of a user "
                          "namespace (no root on this host to switch users with)")
        return (self.verifier_uid if self.verifying else self.agent_uid), None
