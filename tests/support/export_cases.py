"""Hand-made trials in Harbor's layout for the export tests: each case names the bank's calls
of the scored attempt and the expected tools, and says what ToolCallAccuracy must be."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from analysis.synthetic import write_job, write_trial

EXPECTED = ["get_account_balance", "transfer_funds"]
GOALS = ["How much is in my checking account?", "Move $800 from savings to checking"]
BALANCE = {"account_number": "4401287765", "account_type": "checking"}
TRANSFER = {"amount": 800.0, "from_account": "1", "to_account": "2"}
REWARDS = {"tsq": 0.0, "precision": 0.0, "recall": 0.0, "param_validity": 0.0,
           "multiset_f1": 0.0, "goal_coverage": 0.0}


def call(tool: str, arguments: Any, valid: bool = True, attempt: int = 1) -> dict[str, Any]:
    return {"tool": tool, "arguments": arguments, "valid": valid, "attempt": attempt}


def write_case(job: Path, name: str, calls: list[dict[str, Any]], *, accept: int | None = None,
               status: str = "ok", where: str = "agent", tsq_details: dict | None = None,
               exception_type: str | None = None) -> Path:
    """One finished trial whose bank log holds `calls` (seq given in order)."""
    expected, goals = PER_GOAL.get(name, (EXPECTED, [{"text": g} for g in GOALS]))
    # As the verifier writes them (contracts.tsq.GoalMatch): unmapped goals list no tools.
    details = {"expected_tools": expected,
               "goals": [{"index": i, "tools": None, "covered": None, **g}
                         for i, g in enumerate(goals)]}
    trial = write_trial(job, name, scenario_id=name.split("__")[0], rewards=REWARDS,
                        agent_status={"status": status, "reason": None},
                        tsq_details={**details, **(tsq_details or {})},
                        exception_type=exception_type)
    lines = [json.dumps({"seq": i, **c, "errors": [], "ts": 0.0})
             for i, c in enumerate(calls, start=1)]
    if accept is not None:
        lines.append(json.dumps({"accept": accept, "ts": 0.0}))
    if lines:
        (trial / where).mkdir(exist_ok=True)
        (trial / where / "intents.jsonl").write_text("\n".join(lines) + "\n")
    return trial


# name → (bank calls, accepted attempt, ToolCallAccuracy strict order, unordered).
# Expected values from bankbench's mapping (docs/export.md): 1 when the called names equal the
# expected tools in goal order (unordered: the same multiset), times the share of those calls
# whose arguments the bank accepted (param_validity); 0 otherwise.
CASES: dict[str, tuple[list[dict[str, Any]], int | None, float, float]] = {
    "banking-001__right": ([call("get_account_balance", BALANCE),
                            call("transfer_funds", TRANSFER)], None, 1.0, 1.0),
    "banking-002__wrong_tool": ([call("get_account_balance", BALANCE),
                                 call("pay_bill", TRANSFER)], None, 0.0, 0.0),
    "banking-003__missing_tool": ([call("get_account_balance", BALANCE)], None, 0.0, 0.0),
    "banking-004__wrong_arguments": ([call("get_account_balance", BALANCE),
                                      call("transfer_funds", {"amount": "lots"}, valid=False)],
                                     None, 0.5, 0.5),
    "banking-005__order": ([call("transfer_funds", TRANSFER),
                            call("get_account_balance", BALANCE)], None, 0.0, 1.0),
    "banking-006__extra_call": ([call("get_account_balance", BALANCE),
                                 call("transfer_funds", TRANSFER),
                                 call("get_account_balance", BALANCE)], None, 0.0, 0.0),
    "banking-007__spelling": ([call("GetAccountBalance", BALANCE),
                               call("bank__transfer-funds", TRANSFER)], None, 1.0, 1.0),
    "banking-008__no_calls": ([], None, 0.0, 0.0),
    "banking-009__empty_rejected": ([call("get_account_balance", {}, valid=False),
                                     call("transfer_funds", TRANSFER)], None, 0.5, 0.5),
    "banking-010__retry_accepted": ([call("pay_bill", {}, attempt=1),
                                     call("get_account_balance", BALANCE, attempt=2),
                                     call("transfer_funds", TRANSFER, attempt=2)], 2, 1.0, 1.0),
    "banking-011__not_an_object": ([call("get_account_balance", BALANCE),
                                    call("transfer_funds", "800 to checking", valid=False)],
                                   None, 0.5, 0.5),
}


# Per-goal labels (expected.json since labels/2): alternatives, any one of which serves a goal
# (first preferred, which is what expected_tools lists), and goals no tool serves.
PER_GOAL: dict[str, tuple[list[str], list[dict[str, Any]]]] = {
    "banking-012__alternative": (EXPECTED, [
        {"text": GOALS[0], "tools": ["get_account_balance", "get_account_summary"]},
        {"text": GOALS[1], "tools": ["transfer_funds"]}]),
    "banking-013__no_tool_goal": (EXPECTED, [
        {"text": GOALS[0], "tools": ["get_account_balance"]},
        {"text": "Tell me a joke", "tools": [], "no_tool": True},
        {"text": GOALS[1], "tools": ["transfer_funds"]}]),
}
CASES.update({
    # the alternative serves the goal as well as the preferred tool (TSQ, a set F1 against
    # the preferred tools only, gives 0.5 here)
    "banking-012__alternative": ([call("get_account_summary", {"account_number": "1"}),
                                  call("transfer_funds", TRANSFER)], None, 1.0, 1.0),
    # a goal no tool serves expects no call
    "banking-013__no_tool_goal": ([call("get_account_balance", BALANCE),
                                   call("transfer_funds", TRANSFER)], None, 1.0, 1.0),
})


def case_job(job: Path) -> Path:
    write_job(job, n_concurrent=2, n_total_trials=len(CASES))
    for name, (calls, accept, _, _) in CASES.items():
        write_case(job, name, calls, accept=accept)
    return job
