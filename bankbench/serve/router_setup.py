"""What routes a launched stack's requests, read off its frontend's command line (the one
place every profile's choice ends up: `--router-mode`, `--set frontend_args=…`, a GPU
profile's YAML), so a run records what served it whatever way it was configured."""

from __future__ import annotations

import hashlib
from pathlib import Path

from bankbench.serve.state import ServerState
from contracts.sweep import RouterSetup

_FLAGS = {
    "--router-mode": "mode",
    "--router-session-affinity-ttl-secs": "session_affinity_ttl_secs",
    "--router-queue-policy": "queue_policy",
    "--router-queue-threshold": "queue_threshold",
    "--router-policy-config": "policy_config_path",
}


def from_command(argv: list[str]) -> RouterSetup:
    """The routing flags of one frontend argv (`--flag value` or `--flag=value`; the last
    one given wins, as argparse has it), and the policy config file's hash and text."""
    found: dict[str, str] = {}
    for i, arg in enumerate(argv):
        flag, eq, value = arg.partition("=")
        if flag in _FLAGS:
            if eq:
                found[_FLAGS[flag]] = value
            elif i + 1 < len(argv):
                found[_FLAGS[flag]] = argv[i + 1]
    setup = RouterSetup.model_validate(found)
    if setup.policy_config_path:
        try:
            data = Path(setup.policy_config_path).read_bytes()
        except OSError as exc:
            setup.note = f"not readable here ({exc.__class__.__name__})"
        else:
            setup.policy_config_sha256 = hashlib.sha256(data).hexdigest()
            setup.policy_config = data.decode("utf-8", errors="replace")
    return setup


def of_state(state: ServerState) -> RouterSetup | None:
    """The frontend's setup, or None for a stack without a frontend of its own (external)."""
    for component in state.components:
        if component.name == "frontend" or component.name.endswith("-frontend"):
            return from_command(component.command)
    return None
