"""Every timing metric from raw times, on hand-made records with known answers; and old
records (derived ms, no raw times) loading as the same raw times."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pytest import approx

from analysis.metrics import latency
from analysis.metrics.request_metric import DefinitionError, derivation_order
from analysis.synthetic import legacy_line, record, write_job, write_trial
from analysis.tables import load
from contracts.llm_calls import LLMCallRecord

REPO = Path(__file__).resolve().parents[2]


def _raw(send: int | None, reads: list[int], end: int | None, tokens: int | None = 3):
    return record(send_ns=send, read_ns=reads, read_content_chars=[1] * len(reads), end_ns=end,
                  completion_tokens=tokens)


def test_each_definition_on_known_raw_times():
    values = latency.request_timing(_raw(100, [110, 130, 160], 170))
    assert values["ttft_ns"] == 10  # first read − send
    assert values["itl_ns"] == [20, 30]  # consecutive reads
    assert values["itl_mean_ns"] == 25  # (last read − first read) / gaps
    assert values["e2e_ns"] == 70  # end − send
    assert values["tpot_ns"] == approx((70 - 10) / (3 - 1))  # (e2e − ttft) / (tokens − 1)
    assert values["output_tps_per_user"] == approx(1e9 / 30)


def test_one_derivation_over_a_batch_keeps_requests_apart():
    # The second request's first read must not pair with the first's last (no gap across).
    recs = [_raw(100, [110, 130], 140, 2), _raw(None, [], None, None),
            _raw(1000, [1005, 1006, 1010], 1020, 5)]
    raw, reads = latency.raw_inputs(recs)
    shown = latency.presented(latency.derive(raw))
    assert list(latency.gaps_ns(reads)) == [20, 1, 4]
    ms = 1 / latency.NS_PER_MS
    assert shown["ttft_ms"].tolist()[::2] == approx([10 * ms, 5 * ms])
    assert shown["itl_mean_ms"].tolist()[::2] == approx([20 * ms, 2.5 * ms])
    assert shown["tpot_ms"].tolist()[::2] == approx([(40 - 10) * ms, (20 - 5) / 4 * ms])
    assert shown.iloc[1].isna().all()  # the unsent request has no figure at all


def _reply(reads: list[int], chars: list[int], tokens: int, server: dict | None = None,
           end: int | None = None):
    return record(send_ns=0, read_ns=reads, read_content_chars=chars,
                  end_ns=end if end is not None else reads[-1] + 1, completion_tokens=tokens,
                  server=server)


def test_a_reply_in_one_read_has_no_decode_rate_but_the_servers_own():
    # 96 tokens released in one read 107 s after the send: the client saw no decoding
    one = latency.request_timing(_reply([107_000_000_000], [400], 96, end=107_000_300_000))
    assert one["client_tpot_ns"] is None and one["tpot_ns"] is None
    assert one["output_tps_per_user"] is None
    # the same reply with the server's own timing: first token at 1 s, last at 96 s
    timed = latency.request_timing(_reply([107_000_000_000], [400], 96, end=107_000_300_000,
                                          server={"timing": {"ttft_ms": 1000.0,
                                                             "total_time_ms": 96_000.0}}))
    assert timed["server_ttft_ns"] == approx(1e9)
    assert timed["tpot_ns"] == approx(95e9 / 95)  # (total − ttft) / (tokens − 1)
    assert timed["output_tps_per_user"] == approx(1.0)


def test_a_reply_held_back_then_released_counts_only_the_tokens_after_the_first_read():
    # 100 tokens: the first read carries 90 % of the text, 10 more reads stream the rest
    reads = [50_000 + 10 * i for i in range(11)]
    values = latency.request_timing(_reply(reads, [900] + [10] * 10, 100, end=reads[-1]))
    assert values["client_tpot_ns"] == approx(100 / 10)  # (e2e − ttft) / (100 − 90)
    # streamed a token per read: exactly vLLM's (e2e − ttft) / (tokens − 1)
    reads = [1000 + 20 * i for i in range(10)]
    values = latency.request_timing(_reply(reads, [3, 5, 4, 6, 2, 5, 4, 3, 5, 4], 10,
                                           end=reads[-1]))
    assert values["client_tpot_ns"] == approx((reads[-1] - reads[0]) / 9)


def test_the_clients_tpot_comes_first_where_the_reply_streamed():
    server = {"timing": {"ttft_ms": 1.0, "total_time_ms": 11.0}}
    values = latency.request_timing(_reply([100, 200, 300], [1, 1, 1], 3, server, end=300))
    assert values["client_tpot_ns"] == approx(100) and values["tpot_ns"] == approx(100)
    assert values["server_tpot_ns"] == approx(5e6)  # kept beside it


@pytest.mark.parametrize(("send", "reads", "end", "tokens", "absent"), [
    (100, [], 170, 3, {"ttft_ns", "tpot_ns", "output_tps_per_user"}),  # nothing came
    (None, [], None, None, {"ttft_ns", "e2e_ns", "tpot_ns", "output_tps_per_user"}),  # unsent
    (100, [110], None, 3, {"e2e_ns", "tpot_ns", "output_tps_per_user"}),  # cut short
    (100, [110], 120, 1, {"tpot_ns", "output_tps_per_user"}),  # one token: no TPOT
    (100, [110], 120, None, {"tpot_ns", "output_tps_per_user"}),  # no usage: unknown
    (100, [110], 120, 3, {"tpot_ns", "output_tps_per_user"}),  # one read: no decoding seen
])
def test_missing_inputs_give_no_value(send, reads, end, tokens, absent):
    values = latency.request_timing(_raw(send, reads, end, tokens))
    # (no read carried a tool call here, so time to first tool call is always absent; with
    # fewer than two reads there is no gap, so no mean gap)
    names = {m.name for m in latency.REQUEST_METRICS} - {latency.ITL.name, "ttfc_ns"}
    # no server timing in these records; the client's TPOT goes with TPOT
    names -= {"server_ttft_ns", "server_tpot_ns", "client_tpot_ns"}
    assert {n for n in names if values[n] is None} == absent
    assert (values[latency.ITL.name] is None) == (len(reads) < 2)


def test_the_derivation_order_follows_the_requirements():
    order = [m.name for m in latency.DERIVATION_ORDER]
    assert sorted(order) == sorted(m.name for m in latency.REQUEST_METRICS)
    for m in latency.DERIVATION_ORDER:
        assert m.unit and m.display_unit == m.metric.unit
        assert all(r in latency.RAW_INPUTS or order.index(r) < order.index(m.name)
                   for r in m.requires)
    # the order is derived, not declared: the definitions listed backwards give it too
    assert derivation_order(latency.REQUEST_METRICS[::-1], latency.RAW_INPUTS)[-1] == \
        latency.OUTPUT_TPS
    ns = np.array([1_500_000, 2_000_000])
    assert list(latency.TTFT.to_display(ns)) == [1.5, 2.0]  # ns → ms, from the two units
    assert latency.OUTPUT_TPS.to_display(np.array([3.0]))[0] == 3.0


def test_an_unknown_requirement_or_a_circle_fails_naming_them():
    tpot, e2e = latency.TPOT, latency.E2E
    with pytest.raises(DefinitionError, match="tpot_ns requires client_tpot_ns; "
                                               "tpot_ns requires server_tpot_ns"):
        derivation_order([tpot, e2e], latency.RAW_INPUTS)
    looped = replace(e2e, requires=("send_ns", "tpot_ns"))
    circle = [m if m is not e2e else looped for m in latency.REQUEST_METRICS]
    with pytest.raises(DefinitionError, match="in a circle: .*e2e_ns"):
        derivation_order(circle, latency.RAW_INPUTS)
    with pytest.raises(DefinitionError, match="e2e_ns requires sent_ns"):
        derivation_order([replace(e2e, requires=("sent_ns",))], latency.RAW_INPUTS)
    with pytest.raises(DefinitionError, match="e2e_ns is defined twice"):
        derivation_order([e2e, e2e], latency.RAW_INPUTS)


def test_a_bad_definition_stops_the_import(tmp_path):
    """The check runs when the declaring module is imported, before any table is read."""
    source = Path(latency.__file__).read_text(encoding="utf-8")
    broken = source.replace('("tpot_ns",), _per_user', '("tpot_sn",), _per_user')
    assert broken != source
    (tmp_path / "broken_latency.py").write_text(broken, encoding="utf-8")
    run = subprocess.run([sys.executable, "-c", "import broken_latency"], cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{tmp_path}"},
                         capture_output=True, text=True)
    assert run.returncode != 0
    assert "output_tps_per_user requires tpot_sn" in run.stderr.splitlines()[-1]


def test_tables_present_the_same_values_in_ms(tmp_path):
    job = write_job(tmp_path / "job", 1)
    rec = record(request_id="r", send_ns=5_000_000, start_unix_ns=7_000_000_000,
                 read_ns=[15_000_000, 18_000_000, 25_000_000], read_content_chars=[4, 0, 0],
                 read_reasoning_chars=[0, 2, 0], read_tool_call_chars=[0, 0, 9],
                 end_ns=30_000_000, completion_tokens=6)
    write_trial(job, "banking-000__a", scenario_id="banking-000", records=[rec],
                rewards={"tsq": 1.0})
    tables = load(job)
    row = tables.requests.set_index("request_id").loc["r"]
    assert row["ttft_ms"] == approx(10.0) and row["e2e_ms"] == approx(25.0)
    assert row["tpot_ms"] == approx(3.0) and row["output_tps_per_user"] == approx(1000 / 3)
    assert row["end_unix_ns"] == 7_000_000_000 + 25_000_000
    assert (row["content_chars"], row["reasoning_chars"], row["tool_call_chars"]) == (4, 2, 9)
    assert sorted(tables.itl["itl_ms"]) == approx([3.0, 7.0])


def test_old_records_load_as_raw_times_with_the_same_figures(tmp_path):
    line = legacy_line(record(request_id="old", completion_tokens=3), 12.5, [2.0, 4.5], 20.0)
    assert "send_ns" not in json.loads(line)
    old = LLMCallRecord.model_validate_json(line)
    assert old.send_ns == 0 and old.end_ns == 20_000_000 and old.turn == 0
    assert old.read_ns == [12_500_000, 14_500_000, 19_000_000] and not old.sizes_known
    assert "ttft_ms" not in json.loads(old.model_dump_json())  # never written again
    job = write_job(tmp_path / "job", 1)
    write_trial(job, "banking-000__a", scenario_id="banking-000", records=[line],
                rewards={"tsq": 1.0})
    tables = load(job)
    row = tables.requests.iloc[0]
    assert row["ttft_ms"] == approx(12.5) and row["e2e_ms"] == approx(20.0)
    assert row["tpot_ms"] == approx((20.0 - 12.5) / 2)
    assert sorted(tables.itl["itl_ms"]) == approx([2.0, 4.5])
    assert row["content_chars"] != row["content_chars"]  # sizes of old reads: unknown (NaN)
    assert tables.issues.empty


def test_roles_beyond_agent_and_evaluator_are_kept_apart(tmp_path):
    job = write_job(tmp_path / "job", 1)
    write_trial(job, "banking-000__a", scenario_id="banking-000", rewards={"tsq": 1.0},
                records=[record(request_id="a", role="agent", prompt_tokens=100),
                         record(request_id="u", role="user_simulator", prompt_tokens=5000,
                                turn=1)])
    tables = load(job)
    assert tables.requests.set_index("request_id").loc["u", "turn"] == 1
    assert set(tables.requests["role"]) == {"agent", "user_simulator"}
    trial = tables.trials.iloc[0]
    assert trial["n_requests"] == 1 and trial["n_other_role_requests"] == 1
    assert trial["prompt_tokens"] == 100  # the simulated customer's tokens are not the agent's
    from analysis.summary import summarize

    level = summarize(tables).iloc[0]
    assert level["n_requests"] == 1  # the level's serving figures count the agent's call only


def test_tokens_without_usage_are_unknown_not_zero(tmp_path):
    job = write_job(tmp_path / "job", 1)
    write_trial(job, "banking-000__a", scenario_id="banking-000", rewards={"tsq": 1.0},
                records=[record(request_id="a", prompt_tokens=100, completion_tokens=5),
                         record(request_id="b", prompt_tokens=None, completion_tokens=None,
                                cached_tokens=None)])
    trial = load(job).trials.iloc[0]
    assert trial[["prompt_tokens", "completion_tokens", "cached_tokens"]].isna().all()


# a worker id of the size Dynamo hands out: unsigned 64-bit, above the signed range
WORKER = 2**63 + 12345


def test_a_thompson_sweep_names_the_worker_and_reason_of_each_call(tmp_path):
    from analysis.synthetic import write_sweep_manifest
    from contracts.sweep import level_dir

    sweep = write_sweep_manifest(tmp_path / "sweep", [1], router="thompson")
    job = write_job(level_dir(sweep, 1), 1)
    write_trial(job, "banking-000__a", scenario_id="banking-000", rewards={"tsq": 1.0},
                records=[record(request_id="a"), record(request_id="b")])
    router = sweep / "server" / "router"
    router.mkdir(parents=True)
    # the router keys decisions by the frontend's id; the frontend's trace maps it to ours
    (router / "decisions-1.jsonl").write_text(json.dumps(
        {"request_id": "fe-1", "chosen": WORKER, "reason": "lowest sampled TTFT"}) + "\n")
    (router / "request_trace-1.jsonl").write_text(json.dumps(
        {"event": {"request": {"request_id": "fe-1", "x_request_id": "a"}}}) + "\n")
    req = load(sweep).requests.set_index("request_id")
    assert req.loc["a", "router_worker"] == WORKER
    assert req.loc["a", "router_reason"] == "lowest sampled TTFT"
    assert req.loc["b", "router_worker"] is pd.NA  # a call the router never saw


def test_other_routers_leave_the_router_columns_empty(tmp_path):
    job = write_job(tmp_path / "job", 1)
    write_trial(job, "banking-000__a", scenario_id="banking-000", rewards={"tsq": 1.0},
                records=[record(request_id="a")])
    assert load(job).requests["router_worker"].isna().all()
