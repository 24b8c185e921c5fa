"""Server-side figures from Prometheus scrapes taken before and after a level."""

from __future__ import annotations

import pytest

from analysis.metrics.server import prometheus_totals, server_metrics
from analysis.summary import summarize
from analysis.synthetic import synthetic_sweep
from analysis.tables import load

BEFORE = """# HELP dynamo_frontend_requests_total Total requests
# TYPE dynamo_frontend_requests_total counter
dynamo_frontend_requests_total{model="m",status="success"} 10
dynamo_frontend_requests_total{model="m",status="error"} 1
dynamo_component_requests_total{endpoint="generate"} 11
dynamo_frontend_time_to_first_token_seconds_bucket{model="m",le="0.1"} 10
dynamo_frontend_time_to_first_token_seconds_sum{model="m"} 0.5
dynamo_frontend_time_to_first_token_seconds_count{model="m"} 10
"""
AFTER = """dynamo_frontend_requests_total{model="m",status="success"} 30
dynamo_frontend_requests_total{model="m",status="error"} 1
dynamo_component_requests_total{endpoint="generate"} 31
dynamo_frontend_time_to_first_token_seconds_sum{model="m"} 1.5
dynamo_frontend_time_to_first_token_seconds_count{model="m"} 30
dynamo_frontend_inter_token_latency_seconds_sum{model="m"} 0.2
dynamo_frontend_inter_token_latency_seconds_count{model="m"} 40
not a sample line
"""


def test_parse_sums_label_sets():
    samples = prometheus_totals(BEFORE)
    assert samples["dynamo_frontend_requests_total"] == 11
    assert samples["dynamo_frontend_time_to_first_token_seconds_sum"] == 0.5


def test_level_deltas_prefer_frontend_counters(tmp_path):
    (tmp_path / "b.prom").write_text(BEFORE)
    (tmp_path / "a.prom").write_text(AFTER)
    got = server_metrics(tmp_path / "b.prom", tmp_path / "a.prom")
    assert got["server_requests"] == 20  # the worker's counter is not added on top
    assert got["frontend_ttft_ms_mean"] == pytest.approx(1.0 / 20 * 1000)  # Δsum / Δcount
    assert got["frontend_itl_ms_mean"] == pytest.approx(5.0)  # absent before: counts from 0
    assert "frontend_e2e_ms_mean" not in got
    assert server_metrics(tmp_path / "missing.prom", tmp_path / "a.prom") == {}


def test_summary_carries_server_columns(tmp_path):
    sweep = synthetic_sweep(tmp_path / "sw", [1, 2], trials_per_level=2, requests_per_trial=2)
    (sweep / "c2" / "metrics_before.prom").write_text(BEFORE)
    (sweep / "c2" / "metrics_after.prom").write_text(AFTER)
    summary = summarize(load(sweep)).set_index("level")
    assert summary.loc[2, "server_requests"] == 20
    assert summary["server_requests"].isna()[1]  # c1 has no scrapes
