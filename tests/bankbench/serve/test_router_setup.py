"""What routed a run, read off the launched frontend's command line (kept in sweep.json and named
in the report: tests/dynamo/routers/test_router_sweep.py, on its kv router's sweep)."""

from __future__ import annotations

import hashlib

from bankbench.serve.router_setup import from_command, of_state
from bankbench.serve.state import Component, ServerState
from tests.support.router_policy import POLICY


def test_flags_and_the_policy_file_are_read_off_the_command(tmp_path):
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    setup = from_command(["python", "-m", "dynamo.frontend", "--router-mode", "round-robin",
                          "--router-mode=kv", "--router-session-affinity-ttl-secs", "600",
                          "--router-queue-threshold", "0.5", "--router-queue-policy", "wspt",
                          "--router-policy-config", str(policy)])
    assert (setup.mode, setup.session_affinity_ttl_secs, setup.queue_threshold,
            setup.queue_policy) == ("kv", 600, 0.5, "wspt")  # the last --router-mode wins
    assert setup.policy_config == POLICY
    assert setup.policy_config_sha256 == hashlib.sha256(POLICY.encode()).hexdigest()
    assert setup.summary() == (f"kv; affinity 600 s; queue wspt at 0.5 (policy config); "
                               f"policy sha256:{setup.policy_config_sha256[:12]}")
    flag_only = from_command(["--router-queue-policy", "wspt"])
    assert (flag_only.queue_policy, flag_only.queue_policy_from) == ("wspt", "flag")
    gone = from_command(["--router-policy-config", str(tmp_path / "gone.yaml")])
    assert gone.policy_config is None and "not readable" in (gone.note or "")
    bare = from_command(["python", "-m", "dynamo.frontend"])
    assert bare.summary() == "router mode unknown"


def test_the_frontend_component_is_the_one_read(tmp_path):
    state = ServerState(profile="gpu-vllm", base_url="http://x/v1", model="m", router="kv",
                        workers=1, components=[
                            Component(name="s-worker-0", kind="container",
                                      command=["--router-mode", "random"]),
                            Component(name="s-frontend", kind="container",
                                      command=["--router-mode", "kv"])])
    assert of_state(state).mode == "kv"
    assert of_state(state.model_copy(update={"components": []})) is None
