"""The export read back by ragas itself: ToolCallAccuracy on hand-made trials equals what
bankbench's mapping predicts, and a job written by the real `harbor run` scores as it should.

ragas runs in its own venv (tests/analysis/export/ragas_venv.py says why); the first run creates it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from analysis.export.writer import FAMILIES, INDEX_FILE, export_nemo
from tests.analysis.export.ragas_venv import ragas_read_back
from tests.support.built_tasks import CHEAP_LABELS
from tests.support.export_cases import CASES, case_job

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def _by_trial(out: Path, scores: list[float]) -> dict[str, float]:
    index = [json.loads(line) for line in (out / INDEX_FILE).read_text().splitlines()]
    assert len(index) == len(scores)
    return {row["trial"]: score for row, score in zip(index, scores, strict=True)}


@pytest.fixture(scope="module")
def exported_cases(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("ragas")
    export_nemo(case_job(root / "cases"), root / "out")
    return root / "out"


@pytest.mark.parametrize("strict_order", [True, False], ids=["strict", "unordered"])
def test_ragas_tool_call_accuracy_matches_the_mapping(exported_cases, strict_order):
    read = ragas_read_back(exported_cases, strict_order)
    assert read["rows"] == dict.fromkeys(FAMILIES, len(CASES))
    got = _by_trial(exported_cases, read["tool_call_accuracy"])
    want = {name: (strict if strict_order else unordered)
            for name, (_, _, strict, unordered) in CASES.items()}
    assert got == pytest.approx(want)


@pytest.mark.harbor
def test_real_harbor_jobs_scored_by_ragas(tmp_path):
    """Harbor's oracle (one schema-valid call per expected tool, in goal order) scores 1 with
    ragas; its nop agent (no call at all) scores 0."""
    env = {**os.environ, "HARBOR_TELEMETRY": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    bin_dir = Path(sys.executable).parent
    tasks = tmp_path / "tasks"
    built = subprocess.run([str(bin_dir / "bankbench"), "tasks", "build", "--source", "sample",
                            "--out", str(tasks), "--limit", "3", "--labels", CHEAP_LABELS],
                           env=env, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-2000:]
    for agent in ("oracle", "nop"):
        done = subprocess.run(
            [str(bin_dir / "harbor"), "run", "--path", str(tasks), "--agent", agent,
             "--env", "environments.local:LocalEnvironment", "--jobs-dir", str(tmp_path / "jobs"),
             "--job-name", agent, "-n", "2", "-q"],
            cwd=Path(__file__).resolve().parents[3], env=env, capture_output=True, text=True,
            timeout=500)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        cli = subprocess.run([str(bin_dir / "bankbench"), "export", str(tmp_path / "jobs" / agent),
                              "--format", "nemo-evaluator", "--out", str(tmp_path / agent)],
                             env=env, capture_output=True, text=True, timeout=300)
        assert cli.returncode == 0, cli.stderr
        out = tmp_path / agent
        read = ragas_read_back(out)
        assert read["rows"] == dict.fromkeys(FAMILIES, 3)
        scores = read["tool_call_accuracy"]
        index = [json.loads(line) for line in (out / INDEX_FILE).read_text().splitlines()]
        assert len(index) == 3
        want = 1.0 if agent == "oracle" else 0.0
        assert scores == [want] * 3, (agent, scores)
        # bankbench's own TSQ agrees on these runs.
        assert [row["tsq"] for row in index] == [want] * 3
