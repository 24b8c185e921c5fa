"""Harbor's job and trial file names are spelled in one place: a trial's are Harbor's own
`TrialPaths`, a job's `analysis/job_paths.py` · `JobPaths`. Product code outside it and the
contracts composes paths from those, so a layout Harbor changes is followed in one place."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Names of Harbor's job and trial folders' files (its Job and TrialPaths).
HARBOR_NAMES = {"config.json", "result.json", "lock.json", "job.log", "trial.log",
                "exception.txt", "reward.json", "reward.txt"}
HARBOR_FOLDERS = {"agent", "verifier", "artifacts"}
SCANNED = ("analysis", "bankbench", "benchmarks")
ALLOWED = {REPO / "analysis" / "job_paths.py"}
NOT_HARBOR = (REPO / "bankbench" / "serve",)  # a model's config.json, not a job's


def spelled(path: Path) -> list[str]:
    """String constants of `path` that are a Harbor file name, or a folder name used as a
    path part (`x / "agent"`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = [node.value for node in ast.walk(tree)
             if isinstance(node, ast.Constant) and node.value in HARBOR_NAMES]
    found += [node.right.value for node in ast.walk(tree)
              if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)
              and isinstance(node.right, ast.Constant) and node.right.value in HARBOR_FOLDERS]
    return found


def test_no_harbor_file_name_is_typed_outside_its_one_place():
    wrong = {}
    for folder in SCANNED:
        for path in sorted((REPO / folder).rglob("*.py")):
            if path in ALLOWED or any(f in path.parents for f in NOT_HARBOR):
                continue
            if names := spelled(path):
                wrong[str(path.relative_to(REPO))] = names
    assert wrong == {}


def test_the_check_sees_a_typed_name(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text('from pathlib import Path\nx = Path("t") / "result.json"\n'
                      'y = Path("t") / "agent" / "log"\n')
    assert sorted(spelled(sample)) == ["agent", "result.json"]
