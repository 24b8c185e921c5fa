"""The notebooks in analysis/notebooks/ run top to bottom in a real Jupyter kernel (nbclient)
on synthetic sweeps and show the table and figure each one is for."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from analysis.synthetic import synthetic_sweep

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "analysis" / "notebooks").glob("*.ipynb"))
CELL_TIMEOUT_S = 300


def _run(path: Path, parameters: str | None = None) -> nbformat.NotebookNode:
    nb = nbformat.read(path, as_version=4)
    if parameters is not None:
        cell = next(c for c in nb.cells if c.cell_type == "code")
        cell.source += "\n" + parameters  # override the defaults of the parameters cell
    # Raises CellExecutionError (with the traceback) when any cell fails.
    NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                   resources={"metadata": {"path": str(ROOT)}}).execute()
    return nb


def _mime_types(nb: nbformat.NotebookNode) -> set[str]:
    return {mime for cell in nb.cells if cell.cell_type == "code"
            for output in cell.get("outputs", []) for mime in output.get("data", {})}


def test_every_notebook_has_a_parameters_cell_first_and_says_what_it_shows():
    assert len(NOTEBOOKS) >= 4
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
        assert nb.cells[0].cell_type == "markdown", path.name
        assert nb.cells[1].cell_type == "code", path.name
        assert not any(c.get("outputs") for c in nb.cells if c.cell_type == "code"), \
            f"{path.name} is committed with outputs"


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_on_a_synthetic_sweep_and_shows_a_table_and_a_figure(path: Path):
    nb = _run(path)
    kinds = _mime_types(nb)
    assert "text/html" in kinds, f"{path.name} showed no table"
    assert "image/png" in kinds, f"{path.name} drew no figure"


@pytest.mark.slow
def test_compare_notebook_reads_the_paths_given_and_labels_them(tmp_path: Path):
    for name, seed in (("kv", 3), ("rr", 4)):
        synthetic_sweep(tmp_path / name, [2, 8], trials_per_level=12, requests_per_trial=4,
                        seed=seed)
    nb = _run(ROOT / "analysis/notebooks/compare_runs.ipynb",
              f"BASELINE = {str(tmp_path / 'kv')!r}\nOTHER = {str(tmp_path / 'rr')!r}\n"
              "LABELS = ['kv-router', 'round-robin']")
    shown = "".join(o.get("data", {}).get("text/plain", "") for c in nb.cells
                    if c.cell_type == "code" for o in c.get("outputs", []))
    assert "kv-router" in shown and "round-robin" in shown
    assert "c8" in shown and "c16" not in shown  # the given sweeps' levels, not the demo's
