"""Time to first tool call on hand-made raw records with known answers: apart from TTFT when
text comes first, equal to it when the reply is one tool call sent whole (as Dynamo's parsers
send it), absent without a tool call; in the tables beside the server's own TTFT; and an SLO
name that says which one it bounds."""

from __future__ import annotations

import pytest

from analysis.metrics import latency
from analysis.summary import summarize
from analysis.synthetic import record, write_job, write_trial
from analysis.tables import load
from contracts.capacity import slo_column


def _ttfc(send, reads, tool_chars):
    rec = record(send_ns=send, read_ns=reads, read_content_chars=[1] * len(reads),
                 read_tool_call_chars=tool_chars, end_ns=None)
    return latency.request_timing(rec)["ttfc_ns"], latency.request_timing(rec)["ttft_ns"]


def test_known_answers():
    # text at 110 and 130, the call's first delta at 160
    assert _ttfc(100, [110, 130, 160], [0, 0, 42])[0] == 60
    # one whole tool call in one read: TTFC = TTFT
    assert _ttfc(100, [190], [80]) == (90, 90)
    assert _ttfc(100, [110, 130], [0, 0])[0] is None  # no tool call
    assert _ttfc(100, [110], [])[0] is None  # old record: sizes unknown
    assert _ttfc(None, [], [])[0] is None  # never sent


def test_tables_carry_ttfc_beside_the_server_ttft(tmp_path):
    job = write_job(tmp_path / "job", 1)
    recs = [record(send_ns=0, read_ns=[5_000_000, 40_000_000], read_content_chars=[3, 0],
                   read_tool_call_chars=[0, 50], end_ns=41_000_000, completion_tokens=30,
                   server={"timing": {"ttft_ms": 4.5}}),
            record(send_ns=0, read_ns=[8_000_000], read_content_chars=[9],
                   read_tool_call_chars=[0], end_ns=9_000_000, completion_tokens=3)]
    write_trial(job, "banking-000__a", scenario_id="banking-000", records=recs,
                rewards={"tsq": 1.0}, agent_status={"status": "ok", "reason": None})
    tables = load(job)
    req = tables.requests.sort_values("ttft_ms")
    assert list(req["ttft_ms"]) == pytest.approx([5.0, 8.0])
    assert req["ttfc_ms"].iloc[0] == pytest.approx(40.0) and req["ttfc_ms"].isna().iloc[1]
    assert req["server_ttft_ms"].iloc[0] == pytest.approx(4.5)
    row = summarize(tables).iloc[0]
    assert row["ttfc_ms_p50"] == pytest.approx(40.0) and row["ttfc_ms_count"] == 1


def test_slo_names_say_which_first_time_they_bound():
    assert slo_column("ttfc_p90_ms") == slo_column("time_to_first_tool_call_p90_ms") \
        == "ttfc_ms_p90"
    assert slo_column("ttft_p90_ms") == "ttft_ms_p90"
    assert slo_column("server_ttft_p90_ms") == "server_ttft_ms_p90"
