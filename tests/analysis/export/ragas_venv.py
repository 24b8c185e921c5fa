"""ragas in its own venv under the cache, made by the tests that need it.

ragas 0.4.3 cannot join the project's environment: it requires `instructor`, whose releases
pin `jiter<0.15` (and, before 1.17, `openai<3`), while the agent's client needs
`openai>=3.54`, which requires `jiter>=0.16`. `uv pip install ragas==0.4.3` into the project
venv therefore downgrades openai; with `openai>=3.54` required it has no solution. So the
round-trip tests run ragas in a venv of its own, as a user would run NeMo Evaluator apart.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.support.tool_venv import tool_python

RAGAS = "ragas==0.4.3"
# ragas 0.4.3 imports langchain_community.chat_models.vertexai at import time; 0.4 of
# langchain-community no longer has it ("No module named ..."), so the 0.3 line is pinned.
PINS = [RAGAS, "langchain-community<0.4"]
SCORER = Path(__file__).with_name("ragas_score.py")


def ragas_python() -> Path:
    """The venv's python, creating the venv on first use (about 10 s with a warm uv cache)."""
    return tool_python(f"ragas-venv-{RAGAS.split('==')[1]}-lc03", PINS)


def ragas_read_back(*directories: Path) -> list[dict]:
    """ragas' view of exported file sets, one ragas process for all: per directory, rows per
    file and ToolCallAccuracy per row (`tool_call_accuracy` in strict order,
    `tool_call_accuracy_unordered` without)."""
    done = subprocess.run([str(ragas_python()), str(SCORER), *map(str, directories)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    results = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert len(results) == len(directories), done.stdout[-3000:]
    for result in results:
        # Both of ragas' ToolCallAccuracy implementations must agree on every row.
        assert result["collections"] == result["tool_call_accuracy"], result
        assert result["collections_unordered"] == result["tool_call_accuracy_unordered"], result
    return results
