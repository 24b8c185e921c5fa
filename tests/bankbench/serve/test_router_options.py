"""`--router thompson` where it is not available, and its options, refused in one line before
anything starts."""

import pytest

from bankbench.serve import api
from bankbench.serve.cpu_mocker import thompson_commands
from bankbench.serve.errors import ServeError
from bankbench.serve.options import MockerOptions
from bankbench.serve.state import ServerState


@pytest.mark.parametrize("profile, options, says", [
    ("cpu-tiny", {}, "not available on cpu-tiny"),
    ("gpu-vllm", {}, "unknown router"),
    ("cpu-mocker", {"worker_speedup_ratios": "1 0"}, "worker_speedup_ratios"),
    ("cpu-mocker", {"worker_speedup_ratios": "1 fast"}, "worker_speedup_ratios"),
])
def test_refused(profile, options, says):
    with pytest.raises(ServeError, match=says):
        api.check(profile, router="thompson", options=options)


def test_stack_layout(tmp_path):
    opts = MockerOptions.model_validate(
        {"worker_speedup_ratios": "2,0.5", "speedup_ratio": 3, "router_args": "--forget 0.9"})
    state = ServerState(profile="cpu-mocker", base_url="http://127.0.0.1:1/v1", model="m",
                        router="thompson", workers=3, state_dir=tmp_path)
    commands = dict(thompson_commands(tmp_path / "py", tmp_path / "model", state, 1, opts))
    assert list(commands) == ["frontend", "worker-0", "worker-1", "worker-2", "router"]
    front = commands["frontend"]
    assert front[front.index("--namespace") + 1] == "bankbench"
    ratios = [c[c.index("--speedup-ratio") + 1] for n, c in commands.items()
              if n.startswith("worker-")]
    assert ratios == ["2.0", "0.5", "3.0"]  # beyond the list: speedup_ratio
    workers_ns = {c[c.index("--endpoint") + 1] for n, c in commands.items()
                  if n.startswith("worker-")}
    router = commands["router"]
    assert workers_ns == {router[router.index("--worker-endpoint") + 1]}
    assert not next(iter(workers_ns)).startswith("dyn://bankbench.")  # not the frontend's
    assert router[router.index("--min-workers") + 1] == "3"
    assert router[-2:] == ["--forget", "0.9"]
