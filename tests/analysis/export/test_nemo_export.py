"""`bankbench export --format nemo-evaluator` on hand-made jobs: row shapes, which record is
trusted, which trials go in, sweeps, and one-line errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from analysis.export.writer import MANIFEST_FILE, export_nemo
from analysis.synthetic import write_job, write_sweep_manifest
from analysis.tables import AnalysisInputError
from bankbench.cli import main
from contracts.expected import Expected, GoalLabel, LabelsInfo, Provenance
from tests.support.export_cases import BALANCE, EXPECTED, GOALS, TRANSFER, call, write_case


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def trajectory(steps: list[dict]) -> dict:
    return {"schema_version": "ATIF-v1.4", "session_id": "s", "steps": steps,
            "agent": {"name": "banking-agent", "version": "0"}}


def agent_step(step_id: int, message: str, calls: list[tuple[str, str, dict]], attempt: int,
               observations: dict[str, str] | None = None, role: str | None = None) -> dict:
    extra = {"attempt": attempt, **({"role": role} if role else {})}
    step = {"step_id": step_id, "source": "agent", "message": message, "extra": extra,
            "tool_calls": [{"tool_call_id": cid, "function_name": name, "arguments": args}
                           for cid, name, args in calls] or None}
    if observations:
        step["observation"] = {"results": [{"source_call_id": k, "content": v}
                                           for k, v in observations.items()]}
    return step


def test_rows_follow_the_ragas_shapes_with_the_agents_words(tmp_path):
    job = write_job(tmp_path / "job", n_concurrent=1)
    trial = write_case(job, "banking-001__t", [call("get_account_balance", BALANCE, attempt=2),
                                               call("transfer_funds", TRANSFER, attempt=2)],
                       accept=2)
    steps = [
        {"step_id": 1, "source": "user", "message": "please help", "extra": {"attempt": 1}},
        agent_step(2, "first try", [("a", "pay_bill", {})], attempt=1, observations={"a": "x"}),
        agent_step(3, "verdict: retry", [], attempt=1, role="evaluator"),
        {"step_id": 4, "source": "user", "message": "please help", "extra": {"attempt": 2}},
        agent_step(5, "Checking both.", [("b", "get_account_balance", BALANCE),
                                         ("c", "transfer_funds", TRANSFER)], attempt=2,
                   observations={"b": '{"balance": 5}', "c": '{"ok": true}'}),
        agent_step(6, "Your balance is 5 and the transfer is done.", [], attempt=2),
        agent_step(7, "verdict: accept", [], attempt=2, role="evaluator"),
    ]
    (trial / "agent" / "trajectory.json").write_text(json.dumps(trajectory(steps)))
    export_nemo(job, tmp_path / "out")

    [tool_row] = rows(tmp_path / "out" / "tool_call_accuracy.jsonl")
    assert tool_row["user_input"] == [
        {"type": "human", "content": "please help"},  # no instruction.md: the user turn
        {"type": "ai", "content": "Checking both.",  # one model turn, two parallel calls
         "tool_calls": [{"name": "get_account_balance", "args": BALANCE},
                        {"name": "transfer_funds", "args": TRANSFER}]},
        {"type": "tool", "content": '{"balance": 5}'},
        {"type": "tool", "content": '{"ok": true}'},
        {"type": "ai", "content": "Your balance is 5 and the transfer is done."},
    ]
    assert tool_row["reference_tool_calls"] == [{"name": "get_account_balance", "args": BALANCE},
                                                {"name": "transfer_funds", "args": TRANSFER}]
    [goal_row] = rows(tmp_path / "out" / "agent_goal_accuracy.jsonl")
    assert set(goal_row) == {"user_input", "response", "reference"}
    assert goal_row["response"] == "Your balance is 5 and the transfer is done."
    assert all(g in goal_row["reference"] for g in GOALS)
    assert not any(t in goal_row["reference"] for t in EXPECTED)
    [topic_row] = rows(tmp_path / "out" / "topic_adherence.jsonl")
    assert topic_row["reference_topics"] == ["banking"]
    [index] = rows(tmp_path / "out" / "rows.jsonl")
    assert (index["trial"], index["scored_attempt"], index["n_calls"]) == ("banking-001__t", 2, 2)


def test_the_banks_record_outranks_the_agents_folder(tmp_path):
    """A log the agent cannot write (verifier/) is read before agent/intents.jsonl."""
    job = write_job(tmp_path / "job", n_concurrent=1)
    trial = write_case(job, "banking-001__t", [call("get_account_balance", BALANCE)],
                       where="verifier")
    forged = [call("get_account_balance", BALANCE), call("transfer_funds", TRANSFER)]
    (trial / "agent" / "intents.jsonl").write_text(
        "".join(json.dumps({"seq": i, **c}) + "\n" for i, c in enumerate(forged, 1)))
    export_nemo(job, tmp_path / "out")
    [row] = rows(tmp_path / "out" / "tool_call_accuracy.jsonl")
    assert [m["tool_calls"][0]["name"] for m in row["user_input"] if m.get("tool_calls")] == [
        "get_account_balance"]


def test_without_a_log_the_verifiers_copy_of_the_scored_attempt_is_used(tmp_path):
    job = write_job(tmp_path / "job", n_concurrent=1)
    details = {"scored_attempt": 2, "attempts": [
        {"attempt": 1, "reward": {}, "calls": [
            {"seq": 1, "attempt": 1, "tool": "pay_bill", "arguments": {}, "valid": True}]},
        {"attempt": 2, "reward": {}, "calls": [
            {"seq": 2, "attempt": 2, "tool": "transfer_funds", "arguments": TRANSFER,
             "valid": False}]}]}
    write_case(job, "banking-001__t", [], tsq_details=details)
    manifest = export_nemo(job, tmp_path / "out")
    [row] = rows(tmp_path / "out" / "tool_call_accuracy.jsonl")
    assert [m["tool_calls"] for m in row["user_input"] if m.get("tool_calls")] == [
        [{"name": "transfer_funds", "args": TRANSFER}]]
    # rejected arguments: the reference carries a marker, never the agent's own values
    assert row["reference_tool_calls"][1]["args"] != TRANSFER
    assert not [issue for issue in manifest.issues if "banking-001__t" in issue]


def test_only_quality_trials_are_exported_and_the_rest_counted(tmp_path):
    job = write_job(tmp_path / "job", n_concurrent=2)
    write_case(job, "banking-001__ok", [call("get_account_balance", BALANCE)])
    write_case(job, "banking-002__gave_up", [], status="agent_error")
    write_case(job, "banking-003__server", [], status="infra_error")
    write_case(job, "banking-004__env", [], exception_type="EnvironmentStartTimeoutError")
    manifest = export_nemo(job)  # default: beside the job
    out = tmp_path / "job-nemo-evaluator"
    assert [r["status"] for r in rows(out / "rows.jsonl")] == ["scored", "agent_failed"]
    assert manifest.skipped == {"infra_failed": 1, "harness_failed": 1}
    assert json.loads((out / MANIFEST_FILE).read_text())["skipped"] == manifest.skipped


def test_a_sweep_gives_one_file_set_per_level_with_the_tasks_own_files(tmp_path):
    sweep = tmp_path / "sweep"
    for level in (4, 16):
        job = write_job(sweep / f"c{level}", n_concurrent=level)
        write_case(job, f"banking-001__l{level}", [call("get_account_balance", BALANCE)])
    write_sweep_manifest(sweep, [4, 16])
    task = sweep / "tasks" / "banking-001"  # the trial's config.json path no longer exists
    (task / "tests").mkdir(parents=True)
    (task / "tests" / "expected.json").write_text(Expected(
        scenario_id="banking-001", labels=LabelsInfo(method="keyword", version="1"),
        expected_tools=["get_account_balance"],
        goals=[GoalLabel(index=0, text="balance?", tools=["get_account_balance"])],
        provenance=Provenance(dataset_revision="sample-1", builder="bankbench test"),
    ).model_dump_json())
    (task / "instruction.md").write_text("Customer: Maya\n\nWhat is my balance?\n")
    manifest = export_nemo(sweep)
    assert list(manifest.levels.items()) == [("c4", 1), ("c16", 1)]  # numeric level order
    for level in (4, 16):
        [row] = rows(sweep / "nemo-evaluator" / f"c{level}" / "tool_call_accuracy.jsonl")
        assert row["user_input"][0]["content"] == "Customer: Maya\n\nWhat is my balance?"
        assert row["reference_tool_calls"] == [{"name": "get_account_balance", "args": BALANCE}]


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    assert main(["export", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("bankbench export: ") and "no such directory" in err[-1]
    job = write_job(tmp_path / "job", n_concurrent=1)
    write_case(job, "banking-001__server", [], status="infra_error")
    with pytest.raises(AnalysisInputError, match="nothing to export .*1 infra_failed"):
        export_nemo(job, tmp_path / "out")
    assert main(["export", str(job), "--out", str(tmp_path / "out")]) == 2
    assert "nothing to export" in capsys.readouterr().err.strip().splitlines()[-1]


def test_a_new_export_replaces_the_files_of_levels_gone_and_nothing_else(tmp_path, capsys):
    sweep = tmp_path / "sweep"
    for level in (1, 2):
        job = write_job(sweep / f"c{level}", n_concurrent=level)
        write_case(job, f"banking-001__l{level}", [call("get_account_balance", BALANCE)])
    out = tmp_path / "out"
    assert main(["export", str(sweep), "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out / MANIFEST_FILE)
    (out / "c2" / "notes.txt").write_text("mine")
    shutil.rmtree(sweep / "c1")  # level 1 is gone from the sweep, level 4 is new
    write_case(write_job(sweep / "c4", n_concurrent=4), "banking-001__l4",
               [call("get_account_balance", BALANCE)])
    manifest = export_nemo(sweep, out)
    assert list(manifest.levels) == ["c2", "c4"]
    assert not (out / "c1").exists()
    assert (out / "c2" / "notes.txt").read_text() == "mine"
