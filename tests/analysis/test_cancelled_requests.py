"""Requests an interruption cut short are not the server's errors: counted apart and left out
of error_rate, in the summary, the comparison and a capacity search's error_rate alike."""

from __future__ import annotations

from pytest import approx

from analysis.metrics.throughput import error_rate
from analysis.summary import summarize
from analysis.synthetic import record, write_job, write_trial
from analysis.tables import load
from bankbench.capacity.checks import slo_value
from contracts.llm_calls import CallError


def _failed(rid: str):
    return record(request_id=rid, error=CallError(type="cancelled", message="cancelled mid-call"),
                  http_status=None, end_ns=None, read_ns=[], send_ns=0)


def test_requests_of_an_interrupted_trial_are_cancelled_not_failed(tmp_path):
    job = write_job(tmp_path / "job", 2)
    # Ctrl-C: Harbor cancelled the trial with its request in flight
    write_trial(job, "banking-000__a", scenario_id="banking-000", exception_type="CancelledError",
                records=[record(request_id="ok-1"), _failed("cut-1")])
    # a real server error in a finished trial
    write_trial(job, "banking-001__b", scenario_id="banking-001", rewards={"tsq": 1.0},
                records=[record(request_id="ok-2"), record(request_id="ok-3"),
                         record(request_id="err-1", http_status=500,
                                error=CallError(type="http_500", message="boom"))])
    tables = load(job)
    req = tables.requests.set_index("request_id")
    assert req.loc["cut-1", "cancelled"] and not req.loc["err-1", "cancelled"]
    row = summarize(tables).iloc[0]
    assert row["n_cancelled_requests"] == 1 and row["n_failed_requests"] == 1
    assert row["error_rate"] == approx(1 / 4)  # err-1 of the four not cancelled
    assert error_rate(tables.requests) == approx(1 / 4)
    assert slo_value("error_rate", row, tables.requests, 0.0) == approx(1 / 4)
    trials = tables.trials.set_index("scenario_id")
    assert trials.loc["banking-000", "n_cancelled_requests"] == 1
    assert trials.loc["banking-000", "n_failed_requests"] == 0
