"""The export read back by ragas itself: ToolCallAccuracy on hand-made trials equals what
bankbench's mapping predicts, and a job written by the real `harbor run` scores as it should.

ragas runs in its own venv (tests/analysis/export/ragas_venv.py says why); the first run creates it.
One ragas process reads both exports back (its import is most of a read-back's time), and one
Harbor job runs both of Harbor's agents.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from harbor.models.trial.result import TrialResult

from analysis.export.writer import FAMILIES, INDEX_FILE, export_nemo
from tests.analysis.export.ragas_venv import ragas_read_back
from tests.support.export_cases import CASES, case_job
from tests.support.sample_job import run_sample_job

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

SCENARIOS = ("banking-000", "banking-001", "banking-002")
AGENTS = ("oracle", "nop")


def _index(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / INDEX_FILE).read_text().splitlines()]


def _by_trial(out: Path, scores: list[float]) -> dict[str, float]:
    index = _index(out)
    assert len(index) == len(scores)
    return {row["trial"]: score for row, score in zip(index, scores, strict=True)}


@pytest.fixture(scope="module")
def harbor_job(tmp_path_factory) -> Path:
    """Harbor's oracle (one schema-valid call per expected tool, in goal order) and its nop
    agent (no call at all) on three sample tasks, in one job."""
    return run_sample_job(tmp_path_factory.mktemp("harbor"), "agents", SCENARIOS,
                          agents=[{"name": agent} for agent in AGENTS], n_concurrent=3,
                          timeout=500)


@pytest.fixture(scope="module")
def read_back(tmp_path_factory, harbor_job) -> dict[str, tuple[Path, dict]]:
    """The hand-made cases exported in process, the Harbor job by `bankbench export` as a
    user runs it; both read back by one ragas process."""
    root = tmp_path_factory.mktemp("ragas")
    export_nemo(case_job(root / "cases"), root / "cases-out")
    env = {**os.environ, "HARBOR_TELEMETRY": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    cli = subprocess.run([str(Path(sys.executable).parent / "bankbench"), "export",
                          str(harbor_job), "--format", "nemo-evaluator",
                          "--out", str(root / "harbor-out")],
                         env=env, capture_output=True, text=True, timeout=300)
    assert cli.returncode == 0, cli.stderr
    outs = {"cases": root / "cases-out", "harbor": root / "harbor-out"}
    return dict(zip(outs, zip(outs.values(), ragas_read_back(*outs.values()), strict=True),
                    strict=True))


@pytest.mark.parametrize("strict_order", [True, False], ids=["strict", "unordered"])
def test_ragas_tool_call_accuracy_matches_the_mapping(read_back, strict_order):
    out, read = read_back["cases"]
    assert read["rows"] == dict.fromkeys(FAMILIES, len(CASES))
    key = "tool_call_accuracy" if strict_order else "tool_call_accuracy_unordered"
    got = _by_trial(out, read[key])
    want = {name: (strict if strict_order else unordered)
            for name, (_, _, strict, unordered) in CASES.items()}
    assert got == pytest.approx(want)


@pytest.mark.harbor
def test_real_harbor_jobs_scored_by_ragas(read_back, harbor_job):
    """The oracle's trials score 1 with ragas, the nop agent's 0, and bankbench's own TSQ
    agrees on every one."""
    out, read = read_back["harbor"]
    trials = len(SCENARIOS) * len(AGENTS)
    assert read["rows"] == dict.fromkeys(FAMILIES, trials)
    agent_of = {p.parent.name: TrialResult.model_validate_json(p.read_text()).agent_info.name
                for p in harbor_job.glob("*/result.json")}
    index = _index(out)
    assert sorted(agent_of[row["trial"]] for row in index) == sorted(AGENTS * len(SCENARIOS))
    want = [1.0 if agent_of[row["trial"]] == "oracle" else 0.0 for row in index]
    assert read["tool_call_accuracy"] == want
    assert [row["tsq"] for row in index] == want
