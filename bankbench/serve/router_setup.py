"""What routes a launched stack's requests, read off its frontend's command line (the one
place every profile's choice ends up: `--router-mode`, `--set frontend_args=…`, a GPU
profile's YAML), so a run records what served it whatever way it was configured."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import yaml

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
    setup.queue_policy_from = "flag" if setup.queue_policy else None
    if setup.policy_config_path:
        try:
            data = Path(setup.policy_config_path).read_bytes()
        except OSError as exc:
            setup.note = f"not readable here ({exc.__class__.__name__})"
        else:
            setup.policy_config_sha256 = hashlib.sha256(data).hexdigest()
            setup.policy_config = data.decode("utf-8", errors="replace")
            policies = _queue_policies(setup.policy_config)
            if policies:
                setup.queue_policy = ", ".join(policies)
                setup.queue_policy_from = "policy config"
    return setup


def _queue_policies(text: str) -> list[str]:
    """The queue policies of a policy config's classes (root and per model; a class without
    one has Dynamo's default, fcfs); [] when it configures no class or is not YAML (the
    frontend refuses such a file at start, and the text is kept either way)."""
    try:
        doc: Any = yaml.safe_load(text)
    except yaml.YAMLError:
        return []
    if not isinstance(doc, dict):
        return []
    profiles = [doc, *((doc.get("models") or {}).values()
                       if isinstance(doc.get("models"), dict) else [])]
    found = {str(c.get("queue_policy", "fcfs")) for p in profiles if isinstance(p, dict)
             for c in (p.get("policy_classes") or []) if isinstance(c, dict)}
    return sorted(found)


def of_state(state: ServerState) -> RouterSetup | None:
    """The frontend's setup, or None for a stack without a frontend of its own (external)."""
    for component in state.components:
        if component.name == "frontend" or component.name.endswith("-frontend"):
            return from_command(component.command)
    return None
