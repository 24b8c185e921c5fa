"""`bankbench capacity --slo tool_call_error_rate=…` on real parts with one integrity class
injected above a number of requests in flight: the CLI, the real harbor CLI, LocalEnvironment,
the real Dynamo frontend with the mocker engine (scripted tool calls through response-replay
traces), and the FAULT-INJECTING TEST PROXY (tests/support/fault_proxy.py) between them. Used by
tests/integrity/test_integrity_real_frontend.py and `benchmarks/tool_call_integrity.py --stack`."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.support.built_tasks import CHEAP_LABELS
from tests.support.cli import bankbench
from tests.support.integrity_sweep import CALL

REPLAY_AK = "nvext_annotations=output_replay_id:int-{scenario_id}:{request_index}"
TRANSFER = ("transfer_funds", {"from_account": "12345678", "to_account": "87654321",
                               "amount": 25})


@dataclass
class StackRun:
    sweep: Path  # the capacity search's sweep directory (capacity.json, report.md …)
    done: subprocess.CompletedProcess
    corrupted: int  # replies the proxy broke


def scripts(scenarios: int) -> dict[str, list[str]]:
    """Replay scripts of the first `scenarios` sample scenarios: two tool calls (the balance,
    then a transfer), then an answer."""
    from bankbench.serve import replay

    return {f"int-banking-{i:03d}": [replay.tool_call_text(*CALL),
                                     replay.tool_call_text(*TRANSFER),
                                     *["Both requests are done."] * 8]
            for i in range(scenarios)}


def search(base_url: str, model: str, out: Path, fault: str, *, above: int = 2,
           scenarios: int = 10, max_level: int = 4, slo: float = 0.01,
           max_looks: int | None = None, steady: int | None = None,
           timeout: float = 1500) -> StackRun:
    """One capacity search in `out/cap` against a mocker stack replaying `scripts(scenarios)`,
    through the proxy: replies in flight together with more than `above` requests are broken
    the way `fault` names. `max_looks`, `steady`: the search's --max-looks and --steady (None:
    their defaults)."""
    from tests.support.fault_proxy import FaultSchedule, in_thread

    schedule = FaultSchedule(integrity=fault, integrity_above=above)
    with in_thread(base_url, schedule) as proxy:
        done = bankbench(
            "capacity", "--base-url", proxy.base_url, "--model", model,
            "--source", "sample", "--limit", str(scenarios), "--labels", CHEAP_LABELS,
            "--slo", f"tool_call_error_rate={slo:g}", "--max-level", str(max_level),
            "--max-drop", "0.5", "--alpha", "0.5", "--ak", REPLAY_AK, "--out", str(out),
            "--name", "cap",
            *(["--max-looks", str(max_looks)] if max_looks is not None else []),
            *(["--steady", str(steady)] if steady is not None else []),
            timeout=timeout)
    return StackRun(out / "cap", done, proxy.corrupted)
