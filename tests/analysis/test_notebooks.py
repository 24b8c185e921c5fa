"""The notebooks in analysis/notebooks/ run top to bottom in a real Jupyter kernel (nbclient)
on synthetic sweeps and show the table and figure each one is for."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from analysis.synthetic import synthetic_sweep

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "analysis" / "notebooks").glob("*.ipynb"))
CELL_TIMEOUT_S = 300


# Each notebook's run parameters, set to the synthetic demo by name.
DEMO = {"compare_runs": 'BASELINE = OTHER = "demo"', "example": 'JOB = "demo"',
        "latency_quality_frontier": 'RUNS = ["demo"]', "trial_requests": 'RUN = "demo"'}


def _run(path: Path, parameters: str | None = None, *, cwd: Path = ROOT,
         start_dir: Path | None = None, kernel: KernelManager | None = None
         ) -> nbformat.NotebookNode:
    """Run the notebook in a kernel whose working directory is `cwd`, as Jupyter runs it in
    the notebook's folder; `start_dir` is where the user started Jupyter (the $PWD the kernel
    inherits). `kernel`: a running kernel (started in ROOT) to run it in, its namespace
    cleared first, instead of a fresh one."""
    nb = nbformat.read(path, as_version=4)
    if parameters is not None:
        cell = next(c for c in nb.cells if c.cell_type == "code")
        cell.source += "\n" + parameters  # override the defaults of the parameters cell
    if kernel is not None:
        assert cwd == ROOT and start_dir is None
        nb.cells.insert(0, nbformat.v4.new_code_cell("%reset -f"))
        client = NotebookClient(nb, km=kernel, timeout=CELL_TIMEOUT_S)
        try:
            client.execute()
        finally:
            if client.kc is not None:
                client.kc.stop_channels()
        return nb
    client = NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                            resources={"metadata": {"path": str(cwd)}})
    if start_dir is not None:
        os.environ["PWD"], before = str(start_dir), os.environ.get("PWD")
        try:
            client.execute()  # raises CellExecutionError (with the traceback) on any failure
        finally:
            if before is None:
                os.environ.pop("PWD", None)
            else:
                os.environ["PWD"] = before
    else:
        client.execute()
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
    nb = _run(path, DEMO[path.stem])
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


def _outputs(nb: nbformat.NotebookNode) -> str:
    return "".join(o.get("text", "") + o.get("data", {}).get("text/plain", "")
                   for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))


@pytest.fixture(scope="module")
def kernel() -> KernelManager:
    """One kernel for the refusals (each clears its namespace first): a refusal is the
    parameters cell and the cell that reads them, where a fresh kernel per run cost its
    start and imports (8 runs, ~2.6 CPU-s each)."""
    manager = KernelManager(kernel_name="python3")
    manager.start_kernel(cwd=str(ROOT))
    yield manager
    manager.shutdown_kernel(now=True)


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_refuses_a_missing_path_instead_of_inventing_data(path: Path, tmp_path: Path,
                                                                   kernel: KernelManager):
    missing = str(tmp_path / "no-such-sweep")
    params = DEMO[path.stem].replace('"demo"', repr(missing))
    with pytest.raises(CellExecutionError) as caught:
        _run(path, params, kernel=kernel)
    assert "no such directory" in str(caught.value) and str(missing) in str(caught.value)
    with pytest.raises(CellExecutionError) as caught:  # nothing given: say what to set
        _run(path, kernel=kernel)
    assert '"demo"' in str(caught.value) or "'demo'" in str(caught.value)


@pytest.mark.slow
def test_a_relative_path_is_taken_from_where_jupyter_was_started(tmp_path: Path):
    synthetic_sweep(tmp_path / "jobs" / "my-sweep", [2, 8], trials_per_level=6,
                    requests_per_trial=2, seed=5)
    nb = _run(ROOT / "analysis/notebooks/trial_requests.ipynb", 'RUN = "jobs/my-sweep"',
              cwd=ROOT / "analysis" / "notebooks", start_dir=tmp_path)
    assert "SYNTHETIC demo" not in _outputs(nb)
    shown = _outputs(nb)
    assert "banking-" in shown  # the trial picked from the given sweep
