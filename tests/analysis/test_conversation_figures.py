"""Conversation mode in analysis: the turn of every call, the mode and turn count of every
trial, latency by turn, per-conversation figures, the simulated customer's calls reported apart
(and kept out of every serving figure), and goals vs conversation compared, not refused."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from analysis import turns
from analysis.provenance import MixedRunsError
from analysis.report import write_report
from analysis.summary import summarize
from analysis.synthetic import (
    conversation_sweep,
    legacy_line,
    record,
    write_job,
    write_task_stub,
    write_trial,
)
from analysis.tables import load

S = 1_000_000_000
T = 1_700_000_000 * S
OK = {"status": "ok", "reason": None}


def call(request_id: str, turn: int, ttft: float, prompt: int | None, cached: int | None,
         **fields) -> object:
    return record(request_id=request_id, turn=turn, ttft_ms=ttft, e2e_ms=ttft + 10,
                  prompt_tokens=prompt, cached_tokens=cached, start_unix_ns=T, **fields)


@pytest.fixture(scope="module")
def convo_job(tmp_path_factory):
    """A: a conversation over turns 0–2 (task built in conversation mode) with one simulated
    customer call; B: the agent failed without a reward, its task folder is gone, its calls
    reach turn 1 (one failed); C: an old single-turn record (no `turn`), no task folder."""
    root = tmp_path_factory.mktemp("convo")
    tasks = root / "tasks"
    write_task_stub(tasks, "banking-000", mode="conversation")
    job = write_job(root / "job", n_concurrent=2, n_total_trials=3)
    write_trial(job, "banking-000__a", scenario_id="banking-000", tasks_dir=tasks,
                agent_status=OK, records=[
                    call("a0", 0, 10.0, 100, 0),
                    call("a-sim", 1, 5000.0, 9999, 0, role="user_simulator"),
                    call("a1", 1, 20.0, 200, 100),
                    call("a2", 2, 30.0, 300, 200)],
                rewards={"tsq": 1.0, "precision": 1.0, "recall": 1.0, "turns": 2.0},
                tsq_details={"scored_attempt": 1, "attempts": [
                    {"attempt": 1, "reward": {"tsq": 1.0}}], "conversation": {
                        "attempt": 1, "turns": 2, "ended": True, "end_reason": "satisfied"}})
    write_trial(job, "banking-001__b", scenario_id="banking-001", phase_s=(1, 0.5, 20, 2),
                agent_status={"status": "agent_error", "reason": "max steps", "attempts": 1},
                records=[
                    call("b0", 0, 14.0, 100, 50),
                    call("b1", 1, 40.0, 200, None),
                    record(request_id="b-fail", turn=1, ttft_ms=None, e2e_ms=10.0,
                           prompt_tokens=None, completion_tokens=None, cached_tokens=None,
                           http_status=503, error={"type": "http_503", "message": "x"})])
    write_trial(job, "banking-002__c", scenario_id="banking-002", agent_status=OK,
                records=[legacy_line(record(request_id="c0"), 12.0, [], 22.0)],
                rewards={"tsq": 0.5, "precision": 0.5, "recall": 0.5})
    return job


def test_calls_carry_their_turn_and_trials_their_mode_and_turns(convo_job):
    tables = load(convo_job)
    req = tables.requests.set_index("request_id")
    assert req.loc[["a0", "a1", "a2", "b1", "c0"], "turn"].tolist() == [0, 1, 2, 1, 0]
    trials = tables.trials.set_index("scenario_id")
    # From task.toml; from the calls past turn 0 when the task is gone; goals otherwise.
    assert trials["mode"].tolist() == ["conversation", "conversation", "goals"]
    assert trials.loc["banking-000", "turns"] == 2.0
    # A count is never imputed as 0: B has no reward, C's reward predates `turns`.
    assert np.isnan(trials.loc["banking-001", "turns"])
    assert trials.loc["banking-001", "tsq"] == 0.0  # while the scores are
    assert np.isnan(trials.loc["banking-002", "turns"])
    assert trials["last_turn"].tolist() == [2, 1, 0]
    assert trials.loc["banking-000", "end_reason"] == "satisfied"
    assert pd.isna(trials.loc["banking-002", "end_reason"])
    assert trials.loc["banking-000", "n_other_role_requests"] == 1
    assert trials.loc["banking-000", "n_requests"] == 3


def test_latency_by_turn_counts_only_the_system_under_test(convo_job):
    frame = turns.by_turn(load(convo_job).requests).set_index("turn")
    assert frame["requests"].tolist() == [3, 2, 1]  # the customer's and the failed call out
    assert frame.loc[0, "ttft_p50_ms"] == pytest.approx(12.0)
    assert frame.loc[0, "ttft_p90_ms"] == pytest.approx(13.6)  # 10, 12, 14: linear
    assert frame.loc[1, "ttft_p90_ms"] == pytest.approx(38.0)
    assert frame.loc[1, "prompt_tokens_mean"] == 200
    # 50 cached of 300 prompt tokens at turn 0; at turn 1 only A reported its cached count.
    assert frame.loc[0, "cached_share"] == pytest.approx(50 / 300)
    assert frame.loc[1, "cached_share"] == pytest.approx(0.5)
    assert frame.loc[2, "cached_share"] == pytest.approx(200 / 300)


def test_conversation_figures_and_the_customer_reported_apart(convo_job):
    tables = load(convo_job)
    convo = turns.conversations(tables.trials).iloc[0]
    assert convo["conversations"] == 2 and convo["turns_mean"] == 2.0
    assert convo["satisfied_share"] == 1.0  # A said goodbye; B's verifier recorded no end
    assert convo["last_turn_mean"] == 1.5
    # A: 20 + 30 + 40 ms; B: 24 + 50 + 10 (the failed call took time too).
    assert convo["llm_s_mean"] == pytest.approx((0.090 + 0.084) / 2)
    assert convo["resolve_s_mean"] == pytest.approx(15.0)  # agent phases of 10 and 20 s
    other = turns.other_roles(tables.requests).iloc[0]
    assert (other["role"], other["calls"], other["prompt_tokens"]) == ("user_simulator", 1, 9999)
    assert other["request_s"] == pytest.approx(5.010)
    row = summarize(tables).iloc[0]
    assert row["n_requests"] == 7 and row["ttft_ms_p99"] < 100
    modes = turns.quality_by_mode(tables.trials).set_index("mode")
    assert modes.loc["conversation", "counted"] == 2
    assert modes.loc["conversation", "tsq_mean"] == pytest.approx(0.5)


def test_report_shows_conversations_only_for_multi_turn_runs(convo_job, known_job_dir,
                                                             tmp_path):
    text = write_report(convo_job, out=tmp_path / "c", draw=False).read_text()
    assert "## Conversations" in text and "**Latency by turn**" in text
    assert "| user_simulator | 1 | 0 | 9,999 |" in text
    assert "## Conversations" not in write_report(
        known_job_dir, out=tmp_path / "k", draw=False).read_text()
    requests = pd.read_csv(tmp_path / "c" / "requests.csv")
    assert set(requests["turn"]) == {0, 1, 2}
    assert pd.read_csv(tmp_path / "c" / "by_turn.csv")["turn"].tolist() == [0, 1, 2]
    assert not (tmp_path / "k" / "by_turn.csv").exists()
    trials = pd.read_csv(tmp_path / "c" / "trials.csv")
    assert {"mode", "turns", "last_turn"} <= set(trials.columns)


def test_goals_and_conversation_runs_compare_and_say_they_differ(tmp_path):
    goals = conversation_sweep(tmp_path / "goals", [1, 2], mode="goals")
    convo = conversation_sweep(tmp_path / "convo", [1, 2], turns=3)
    with pytest.raises(MixedRunsError, match="a comparison of protocols"):
        write_report(goals, out=tmp_path / "r", compare=[convo], draw=False)
    report = write_report(goals, out=tmp_path / "r", compare=[convo], draw=True,
                          allow_mixed=True)
    text = report.read_text()
    assert "differ in mode (goals: goals; convo: conversation)" in text
    payload = json.loads((report.parent / "summary.json").read_text())
    assert payload["mixed_runs"] == [] and payload["mode_differences"]
    assert (report.parent / "plots" / "by_turn.png").is_file()
    by_mode = text.split("**Quality by instruction mode**")[1].split("##")[0]
    assert "| goals | 1 | goals | 4 | 0.9" in by_mode
    assert "| convo | 1 | conversation | 4 | 0.7" in by_mode
    # The customer's slow calls (TTFT 900 ms) stay out of the serving figures and deltas.
    summary = pd.DataFrame(payload["summary"]).set_index(["source", "level"])
    assert summary.loc[("convo", 1), "ttft_ms_p99"] < 900
    assert summary.loc[("convo", 1), "n_requests"] == 4 * 3 * 2
    compared = pd.DataFrame(payload["comparison"])
    p99 = compared[(compared["metric"] == "ttft_ms_p99") & (compared["level"] == "c1")]
    assert p99["value"].iloc[0] < 900


def test_by_turn_names_routers_only_when_they_differ(tmp_path):
    kv = conversation_sweep(tmp_path / "kv", [2], router="kv")
    rr = conversation_sweep(tmp_path / "rr", [2], router="round-robin", cached_share=0.0)
    from analysis.tables import load_many

    tables = load_many([kv, rr])
    frame = turns.by_turn(tables.requests, turns.routers_of(tables.sweeps))
    assert set(frame["router"]) == {"kv", "round-robin"}
    later = frame[frame["turn"] > 0].set_index("router")["cached_share"]
    assert (later.loc["kv"] > 0.5).all() and (later.loc["round-robin"] == 0).all()
    assert "| router |" in turns.by_turn_table(frame)
    assert "| router |" not in turns.by_turn_table(frame[frame["router"] == "kv"])


def test_routing_benchmark_reads_and_prints_mode_by_router_sweeps(tmp_path, capsys):
    from benchmarks.conversation_routing import main

    for mode in ("conversation", "goals"):
        for router, share in (("kv", 0.9), ("round-robin", 0.1)):
            conversation_sweep(tmp_path / mode / f"r-{router}", [4], mode=mode, router=router,
                               cached_share=share)
    assert main(["--sweeps", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "| conversation/kv | 4 | 2 | 8 |" in out
    assert "| goals/round-robin | 4 | 0 | 8 |" in out
    assert "| goals/kv | 4 | 1 |" not in out  # goals mode has one turn
    section = out.split("turn 0 vs later turns")[1].split("Per conversation")[0]
    digest = {line.split("|")[1].strip(): line for line in section.splitlines()
              if line.startswith("| conversation/")}
    later_kv = float(digest["conversation/kv"].split("|")[6])
    later_rr = float(digest["conversation/round-robin"].split("|")[6])
    assert later_kv > 0.7 > 0.2 > later_rr
    assert main(["--sweeps", str(tmp_path / "nothing")]) == 2


def test_sweep_progress_lines_leave_the_customer_out(convo_job):
    from analysis.progress import running_summary

    progress = running_summary(convo_job)
    # A's 10/20/30, B's 14/40 and C's 12 ms; the customer's 5,000 ms call is not the server's.
    assert progress["n_requests"] == 6
    assert progress["ttft_ms_mean"] == pytest.approx((10 + 20 + 30 + 14 + 40 + 12) / 6)


def test_the_report_names_the_customer_and_compare_refuses_another_one(tmp_path):
    scripted = conversation_sweep(tmp_path / "scripted", [1], turns=2)
    llm = conversation_sweep(tmp_path / "llm", [1], turns=2,
                             customer="llm m7 @ 127.0.0.1:9000 prompt sha256:0123456789ab")
    alone = write_report(scripted, out=tmp_path / "one", draw=False).read_text()
    assert "scripted customer.py sha256:000000000000" in alone
    with pytest.raises(MixedRunsError, match="differ in customer"):
        write_report(scripted, out=tmp_path / "r", compare=[llm], draw=False)
    text = write_report(scripted, out=tmp_path / "r", compare=[llm], draw=False,
                        allow_mixed=True).read_text()
    assert "llm m7 @ 127.0.0.1:9000 prompt sha256:0123456789ab" in text
    assert "differ in customer" in text
    # The same customer on both sides compares without a word about it.
    again = conversation_sweep(tmp_path / "again", [1], turns=2)
    same = write_report(scripted, out=tmp_path / "s", compare=[again], draw=False).read_text()
    assert "differ in customer" not in same
