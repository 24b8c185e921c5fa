"""The validity block every report carries: worker shares where the server names the worker,
achieved vs configured concurrency, router and server as recorded, and its warnings."""

from __future__ import annotations

import json

import pandas as pd

from analysis.report import write_report
from analysis.summary import summarize
from analysis.tables import load
from analysis.validity import validity_section, worker_shares
from contracts.sweep import SWEEP_FILE
from tests.support.integrity_sweep import write_integrity_sweep


def _block(path, out) -> str:
    text = write_report(path, out=out, draw=False).read_text()
    return text.split("## Validity of the run")[1].split("\n## ")[0]


def test_an_even_sweep_has_the_block_and_no_warning(tmp_path):
    sweep = write_integrity_sweep(tmp_path / "even", [1, 2], scenarios=5, workers=(
        4157656465538658434, 624846308404155452))
    block = _block(sweep, tmp_path / "out")
    assert "WARNING" not in block
    assert "router round-robin" in block and "server version ai-dynamo 1.6.1" in block
    assert "…658434 50 %, …155452 50 %" in block or "…155452 50 %, …658434 50 %" in block
    shares = worker_shares(load(sweep).requests)
    assert set(shares["share"]) == {0.5}


def test_a_worker_that_took_nothing_at_a_level_is_named(tmp_path):
    sweep = write_integrity_sweep(tmp_path / "skewed", [1], scenarios=5, workers=(7,))
    manifest = json.loads((sweep / SWEEP_FILE).read_text())
    manifest["config"]["workers"] = 2  # two were started; one served everything
    (sweep / SWEEP_FILE).write_text(json.dumps(manifest))
    block = _block(sweep, tmp_path / "out")
    assert "a worker took almost nothing of 30 requests" in block
    assert "1 of 2 configured worker(s) never named" in block


def test_router_changes_moves_and_unknown_servers_are_warned(tmp_path):
    sweep = write_integrity_sweep(tmp_path / "moved", [1, 2], scenarios=3, workers=())
    manifest = json.loads((sweep / SWEEP_FILE).read_text())
    manifest["level_records"][1]["router"] = "kv"
    manifest["earlier_base_urls"] = ["http://old:8000/v1"]
    manifest["versions"] = {"bankbench": "0.1.0", "harbor": "0.25", "ai-dynamo": None}
    (sweep / SWEEP_FILE).write_text(json.dumps(manifest))
    block = _block(sweep, tmp_path / "out")
    assert "the router changed within the sweep (c1 round-robin, c2 kv)" in block
    assert "the sweep moved server mid-way (http://old:8000/v1 →" in block
    assert "the server's version was not recorded" in block
    assert "not named by the server" in block


def test_a_single_job_still_gets_the_block(tmp_path):
    sweep = write_integrity_sweep(tmp_path / "one", [2], scenarios=3)
    tables = load(sweep / "c2")
    lines = validity_section(tables, summarize(tables))
    text = "\n".join(lines)
    assert "a single Harbor job; no sweep record of the server" in text
    assert isinstance(worker_shares(tables.requests), pd.DataFrame)
