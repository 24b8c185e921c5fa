"""`bankbench export --format aiperf`: one AIPerf record per LLM request and the level's
aggregates, read back by AIPerf 0.13.0's own models and its plot tool's run loader (in a venv
of its own)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from analysis.export.aiperf import AGGREGATE_FILE, RECORDS_FILE, TAGS, export_aiperf
from analysis.synthetic import (
    T0,
    raw_times,
    record,
    write_job,
    write_sweep_manifest,
    write_trial,
)
from analysis.tables import load
from tests.support.tool_venv import tool_python

AIPERF_PINS = ["aiperf==0.13.0"]


def level_job(sweep: Path, level: int, slow: float) -> None:
    job = write_job(sweep / f"c{level}", n_concurrent=level)
    for k, scenario in enumerate(("banking-001", "banking-002")):
        name = f"{scenario}__c{level}"
        t = int(T0.timestamp()) * 1_000_000_000 + k * 1_000_000
        calls = [
            # 3 output tokens over 2 gaps: TPOT = (E2E − TTFT) / 2
            record(request_id=f"{name}-a", trial_name=name, scenario_id=scenario,
                   session_id=name, start_unix_ns=t, completion_tokens=3, prompt_tokens=900,
                   **raw_times(10.0 * slow, [5.0, 5.0], 20.0 * slow + 5, send_ns=t)),
            record(request_id=f"{name}-b", trial_name=name, scenario_id=scenario,
                   session_id=name, start_unix_ns=t + 50_000_000, completion_tokens=1,
                   **raw_times(8.0 * slow, [], 8.0 * slow, send_ns=t + 50_000_000)),
            # the simulated customer's call: not the agent's load, not exported
            record(request_id=f"{name}-u", trial_name=name, scenario_id=scenario,
                   role="user_simulator", start_unix_ns=t + 90_000_000,
                   **raw_times(100.0, [], 150.0, send_ns=t + 90_000_000)),
        ]
        if k == 1:
            calls.append(record(
                request_id=f"{name}-x", trial_name=name, scenario_id=scenario, session_id=name,
                start_unix_ns=t + 70_000_000, http_status=503, completion_tokens=None,
                error={"type": "http_503", "message": "overloaded"},
                **raw_times(None, [], 3.0, send_ns=t + 70_000_000)))
        write_trial(job, name, scenario_id=scenario, records=calls,
                    rewards={"tsq": 1.0, "precision": 1.0, "recall": 1.0,
                             "param_validity": 1.0, "multiset_f1": 1.0, "goal_coverage": 1.0},
                    agent_status={"status": "ok", "reason": None, "attempts": 1})


def two_levels(sweep: Path) -> Path:
    write_sweep_manifest(sweep, [1, 4], base_url="http://127.0.0.1:8000/v1")
    level_job(sweep, 1, slow=1.0)
    level_job(sweep, 4, slow=3.0)
    return sweep


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_each_request_is_one_record_with_bankbenchs_figures(tmp_path):
    sweep = two_levels(tmp_path / "sweep")
    manifest = export_aiperf(sweep)
    assert manifest.levels == {"c1": 5, "c4": 5}
    assert manifest.skipped == {"user_simulator requests": 4}
    requests = load(sweep).requests.set_index("request_id")
    records = lines(sweep / "aiperf" / "c4" / RECORDS_FILE)
    by_id = {r["metadata"]["x_request_id"]: r for r in records}
    assert set(by_id) == {f"banking-00{k}__c4-{s}" for k in (1, 2) for s in "ab"} | {
        "banking-002__c4-x"}
    first = by_id["banking-001__c4-a"]
    assert first["metrics"]["time_to_first_token"] == {"value": pytest.approx(30.0), "unit": "ms"}
    assert first["metrics"]["request_latency"]["value"] == pytest.approx(65.0)
    assert first["metrics"]["inter_token_latency"]["value"] == pytest.approx((65 - 30) / 2)
    assert first["metrics"]["inter_chunk_latency"] == {"value": [5.0, 5.0], "unit": "ms"}
    assert first["metrics"]["output_sequence_length"] == {"value": 3.0, "unit": "tokens"}
    for rid, rec in by_id.items():
        for tag, (column, unit) in TAGS.items():
            value = requests.loc[rid, column]
            if value == value:  # NaN stays out
                assert rec["metrics"][tag] == {"value": pytest.approx(value), "unit": unit}
            else:
                assert tag not in rec["metrics"]
    meta = first["metadata"]
    assert (meta["session_num"], meta["turn_index"], meta["x_correlation_id"],
            meta["conversation_id"], meta["worker_id"]) == (0, 0, "banking-001__c4",
                                                            "banking-001", "c4")
    assert meta["request_end_ns"] - meta["request_start_ns"] == 65_000_000
    assert by_id["banking-002__c4-x"]["metadata"]["turn_index"] == 2  # its trial's third call
    failed = by_id["banking-002__c4-x"]
    assert failed["error"] == {"code": 503, "type": "http_503", "message": "http_503"}
    assert "time_to_first_token" not in failed["metrics"]
    aggregate = json.loads((sweep / "aiperf" / "c4" / AGGREGATE_FILE).read_text())
    assert aggregate["request_count"]["avg"] == 4 and aggregate["error_request_count"]["avg"] == 1
    assert aggregate["time_to_first_token"]["count"] == 4  # successful requests only
    assert aggregate["input_config"]["phases"][0]["concurrency"] == 4


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_aiperf_reads_two_levels_with_its_own_models_and_loader(tmp_path):
    sweep = two_levels(tmp_path / "sweep")
    export_aiperf(sweep)
    python = tool_python("aiperf-venv-0.13.0", AIPERF_PINS)
    check = """
import json, sys
from pathlib import Path
from aiperf.common.models.export_models import JsonExportData
from aiperf.common.models.record_models import MetricRecordInfo
from aiperf.metrics.metric_registry import MetricRegistry
from aiperf.plot.core.data_loader import DataLoader
out = {}
for d in map(Path, sys.argv[1:]):
    records = [MetricRecordInfo.model_validate_json(l)
               for l in (d / "profile_export.jsonl").read_text().splitlines()]
    aggregate = JsonExportData.model_validate_json((d / "profile_export_aiperf.json").read_text())
    run = DataLoader().load_run(d)
    units = {}
    for r in records:
        for tag, v in r.metrics.items():
            c = MetricRegistry.get_class(tag)
            units[tag] = [v.unit, str(getattr(c, "display_unit", None) or c.unit)]
    out[d.name] = {"records": len(records), "loaded": len(run.requests),
                   "concurrency": run.metadata.concurrency, "model": run.metadata.model,
                   "ttft_p50": aggregate.time_to_first_token.p50, "units": units}
print(json.dumps(out))
"""
    dirs = [str(sweep / "aiperf" / f"c{level}") for level in (1, 4)]
    done = subprocess.run([str(python), "-c", check, *dirs], capture_output=True, text=True,
                          timeout=300, env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-3000:]
    read = json.loads(done.stdout.strip().splitlines()[-1])
    assert [read[f"c{lv}"]["records"] for lv in (1, 4)] == [5, 5]
    assert [read[f"c{lv}"]["loaded"] for lv in (1, 4)] == [5, 5]
    assert [read[f"c{lv}"]["concurrency"] for lv in (1, 4)] == [1, 4]
    assert read["c4"]["model"] == "synthetic-model"
    assert read["c4"]["ttft_p50"] > read["c1"]["ttft_p50"]
    for level in ("c1", "c4"):  # every unit is AIPerf's display unit for that tag
        for tag, (ours, theirs) in read[level]["units"].items():
            assert ours == theirs, (level, tag)
