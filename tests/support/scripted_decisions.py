"""Scripted agent decisions for capacity searches on the mocker (response-replay traces): per
scenario the usual script (the balance, then a second tool, then an answer) and the same with
another second tool (`alt-`) or a third (`far-`), and the choice the FAULT-INJECTING TEST PROXY
makes per agent session between them (tests/support/fault_proxy.py · `FaultSchedule(rescript=…)`):
noise at every level, and divergence that grows above a load."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

# The capacity searches' design: six sample scenarios, each request naming its script.
N_SCENARIOS = 6
REPLAY_AK = "nvext_annotations=output_replay_id:cap-{scenario_id}:{request_index}"
SECOND_TOOL = {"transfer_funds": {"from_account": "12345678", "to_account": "87654321",
                                  "amount": 25},
               "freeze_card": {"card_number": "4111111111111111"},
               "open_account": {"account_type": "savings"}}


def turns(second: str) -> list[str]:
    """Two tool calls (the balance, then `second`), then an answer."""
    from bankbench.serve.replay import tool_call_text as tc

    return [tc("get_account_balance", {"account_number": "12345678",
                                       "account_type": "checking"}),
            tc(second, SECOND_TOOL[second]), *["Both requests are done."] * 8]


def scripts(n: int, usual: str = "cap-") -> dict[str, list[str]]:
    """Per sample scenario 0..n-1: `<usual>` the usual calls, `alt-` another second tool,
    `far-` a third."""
    out = {}
    for sid in (f"banking-{i:03d}" for i in range(n)):
        out[f"{usual}{sid}"] = turns("transfer_funds")
        out[f"alt-{sid}"] = turns("freeze_card")
        out[f"far-{sid}"] = turns("open_account")
    return out


def noise(grow_above: int | None, usual: str = "cap-") -> Callable[[str, int, int], str]:
    """One session in four of each scenario switched to the `alt-` script at every level;
    with `grow_above`, every session that starts among more requests in flight than that
    switched to `far-` instead."""
    def pick(prefix: str, k: int, in_flight: int) -> str:
        sid = prefix.removeprefix(usual)
        if grow_above is not None and in_flight > grow_above:
            return f"far-{sid}"
        return f"alt-{sid}" if (int(sid[-3:]) + k) % 4 == 0 else prefix

    return pick


@contextmanager
def scripted_stack(work: Path) -> Iterator:
    """The mocker stack (2 workers, speed-up 1) replaying these scripts for N_SCENARIOS: yields
    its ServerState. Searches reach it through the fault-injecting test proxy
    (tests/support/fault_proxy.py · in_thread), one proxy and schedule per search."""
    from bankbench.serve import api, replay

    trace = replay.write_trace(work / "trace.jsonl", scripts(N_SCENARIOS))
    with api.running("cpu-mocker", workers=2, state_dir=work / "state",
                     options={"speedup_ratio": 1.0, "replay_trace": str(trace)}) as state:
        yield state
