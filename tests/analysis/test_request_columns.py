"""The requests table's columns come from one declaration each (analysis/request_columns.py):
every declared column is in the table, in order, with its dtype, and filled from its source."""

from __future__ import annotations

import pytest

from analysis.request_columns import COLUMNS
from analysis.synthetic import record, write_job, write_trial
from analysis.tables import load
from analysis.trial_rows import TrialTask, read_trials


def test_every_declared_column_is_in_the_table_with_its_dtype(tmp_path):
    job = write_job(tmp_path / "job", 1, n_total_trials=1)
    write_trial(job, "banking-000__a", scenario_id="banking-000", records=[
        record(trial_name="banking-000__a", scenario_id="banking-000", step=0,
               send_ns=100, read_ns=[110, 130], read_content_chars=[1, 1], end_ns=170,
               completion_tokens=3)])
    requests = load(job).requests
    names = [c.name for c in COLUMNS]
    assert len(set(names)) == len(names)
    assert [n for n in requests.columns if n in names] == names
    read = read_trials([TrialTask(job / "banking-000__a", "job", "job", 1, True)]).req
    assert list(read) == names
    for column in COLUMNS:
        if column.dtype != "object":  # as read, before the tables' own conversions
            assert read[column.name].dtype.kind == column.dtype[0], column
    row = requests.iloc[0]
    assert row["ttft_ms"] == pytest.approx(1e-5) and row["n_itl"] == 1  # timing: raw times
    assert row["completion_tokens"] == 3 and row["content_chars"] == 2  # record, read
