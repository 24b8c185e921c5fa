"""Reading job and sweep directories: nothing dropped silently, partial files tolerated."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis.synthetic import record, synthetic_sweep, write_job, write_trial
from analysis.tables import AnalysisInputError, load, load_many


def test_known_job_statuses_and_columns(known_job_dir):
    tables = load(known_job_dir)
    status = dict(zip(tables.trials["trial"], tables.trials["status"], strict=True))
    assert status == {"banking-000__a": "scored", "banking-001__b": "agent_failed",
                      "banking-002__c": "infra_failed", "banking-003__d": "harness_failed"}
    d = tables.trials.set_index("trial").loc["banking-003__d"]
    assert d["exception_type"] == "EnvironmentStartTimeoutError"
    # The environment never started: no agent setup, no agent run.
    assert d["setup_s"] == pytest.approx(1.0) and pd.isna(d["agent_s"])
    assert list(tables.requests["request_id"]) == ["A", "B", "C"]
    assert set(tables.requests["level"]) == {2}
    assert list(tables.requests["ok"]) == [True, True, False]
    assert tables.requests.loc[2, "error_type"] == "http_503"
    assert len(tables.itl) == 4 and tables.issues.empty


def test_partial_job_keeps_everything_readable(partial_job_dir):
    tables = load(partial_job_dir)
    status = dict(zip(tables.trials["trial"], tables.trials["status"], strict=True))
    assert status == {"banking-010__a": "scored", "banking-011__b": "running",
                      "banking-012__c": "scored", "banking-013__d": "running"}
    # The running trial's finished call counts; its cut line and the bad line are reported.
    assert sorted(tables.requests["request_id"]) == ["A1", "B1", "C1"]
    messages = "\n".join(tables.issues["message"])
    assert "truncated last line skipped" in messages
    assert "unreadable record skipped" in messages
    assert "unreadable JSON" in messages
    truncated = tables.issues[tables.issues["message"].str.contains("truncated")].iloc[0]
    assert truncated["path"].endswith("banking-011__b/agent/llm_calls.jsonl")
    assert truncated["line"] == 2


def test_unfinished_trial_of_finished_job_is_a_harness_failure(tmp_path):
    job = write_job(tmp_path / "job", n_concurrent=1, finished=True)
    write_trial(job, "banking-000__x", scenario_id="banking-000", running=True)
    tables = load(job)
    assert tables.trials.loc[0, "status"] == "harness_failed"


def test_agent_failure_without_reward_scores_zero(tmp_path):
    job = write_job(tmp_path / "job", n_concurrent=1)
    write_trial(job, "banking-000__x", scenario_id="banking-000",
                exception_type="AgentTimeoutError")
    trial = load(job).trials.iloc[0]
    assert trial["status"] == "agent_failed" and trial["in_quality"]
    assert trial["reward_imputed"] and trial["tsq"] == 0.0


def test_repeated_trials_are_numbered_by_start(tmp_path):
    from datetime import timedelta

    from analysis.synthetic import T0

    job = write_job(tmp_path / "job", n_concurrent=1)
    for name, minutes in (("banking-000__zz", 0), ("banking-000__aa", 5), ("banking-001__q", 1)):
        write_trial(job, name, scenario_id=name.split("__")[0], rewards={"tsq": 1.0},
                    started_at=T0 + timedelta(minutes=minutes))
    repeat = dict(zip(*load(job).trials[["trial", "repeat"]].T.values, strict=True))
    assert repeat == {"banking-000__zz": 1, "banking-000__aa": 2, "banking-001__q": 1}


def test_sweep_levels_from_manifest_and_dirs(tmp_path):
    sweep = synthetic_sweep(tmp_path / "sw", [1, 2], trials_per_level=3, requests_per_trial=2)
    tables = load(sweep)
    assert sorted(tables.jobs["level"]) == [1, 2]
    assert tables.trials.groupby("level").size().to_dict() == {1: 3, 2: 3}
    assert len(tables.requests) == 12 and tables.sweeps["sw"].model == "synthetic-model"
    (sweep / "sweep.json").unlink()
    tables = load(sweep)
    assert sorted(tables.jobs["level"]) == [1, 2]
    assert tables.issues["message"].str.contains("missing").any()


def test_compare_sources_get_distinct_labels(known_job_dir):
    tables = load_many([known_job_dir, known_job_dir])
    assert tables.sources == ["known-job", "known-job#2"]
    assert len(tables.trials) == 8


def test_not_a_job_is_one_clear_error(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(AnalysisInputError, match="empty: not a Harbor job"):
        load(tmp_path / "empty")
    with pytest.raises(AnalysisInputError, match="no such directory"):
        load(tmp_path / "nope")


def test_server_worker_id_and_itl_rows(tmp_path):
    job = write_job(tmp_path / "job", n_concurrent=1)
    disagg = {"worker_id": {"prefill_worker_id": 1, "decode_worker_id": 2}}
    write_trial(job, "banking-000__x", scenario_id="banking-000", rewards={"tsq": 1.0},
                agent_status={"status": "ok", "attempts": 3, "llm_calls": 3},
                records=[record(request_id="r1", itl_ms=[1.0, 2.0], server={"worker_id": 7}),
                         record(request_id="r2", itl_ms=[3.0]),
                         record(request_id="r3", server=disagg)])
    tables = load(job)
    workers = tables.requests["worker_id"]
    assert workers[0] == "7" and pd.isna(workers[1]) and workers[2] == "2"
    assert tables.trials.loc[0, "n_attempts"] == 3  # the agent's own count, no tsq.json
    assert list(tables.itl["request_row"]) == [0, 0, 1]  # r3 has no gaps
    assert tables.trials.loc[0, "itl_ms_mean"] == pytest.approx(2.0)


def test_sweep_level_not_started_yet_is_reported(tmp_path):
    from analysis.synthetic import write_sweep_manifest

    sweep = synthetic_sweep(tmp_path / "sw", [1], trials_per_level=2, requests_per_trial=1)
    write_sweep_manifest(sweep, [1, 8], finished_at=None)
    tables = load(sweep)
    assert list(tables.jobs["level"]) == [1]
    missing = tables.issues[tables.issues["message"].str.contains("no job yet")]
    assert list(missing["path"]) == [str(sweep / "c8")]


def test_server_timing_columns_split_the_client_ttft(tmp_path):
    job = write_job(tmp_path / "job", n_concurrent=1)
    start_ns = 1_795_000_000_000_000_000
    timing = {"request_received_ms": start_ns // 1_000_000 + 3, "ttft_ms": 20.5,
              "total_time_ms": 300.0}
    write_trial(job, "banking-000__x", scenario_id="banking-000", rewards={"tsq": 1.0},
                agent_status={"status": "ok"},
                records=[record(request_id="r1", start_unix_ns=start_ns, ttft_ms=25.0,
                                server={"timing": timing}),
                         record(request_id="r2", server={"timing": {"ttft_ms": "n/a"}}),
                         record(request_id="r3")])
    req = load(job).requests.set_index("request_id")
    assert req.loc["r1", "server_ttft_ms"] == 20.5 and req.loc["r1", "server_total_ms"] == 300.0
    assert req.loc["r1", "send_to_received_ms"] == pytest.approx(3.0)
    assert req.loc[["r2", "r3"], ["server_ttft_ms", "send_to_received_ms"]].isna().all().all()
