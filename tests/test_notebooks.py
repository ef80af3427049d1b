"""Every notebook runs top to bottom; a cell that raises fails the test."""
import json
import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def _kernel_environment(monkeypatch):
    """Plot without a display, and import this checkout's jaxlite even when not installed."""
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_stored_without_outputs(path):
    cells = json.loads(path.read_text())["cells"]
    assert all(not c.get("outputs") and c.get("execution_count") is None
               for c in cells if c["cell_type"] == "code")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path, tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    _kernel_environment(monkeypatch)
    notebook = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    errors = [o for c in notebook.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors


def test_a_raising_notebook_fails(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    _kernel_environment(monkeypatch)
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("raise ValueError('boom')")])
    client = nbclient.NotebookClient(notebook, timeout=60, kernel_name="python3")
    with pytest.raises(nbclient.exceptions.CellExecutionError, match="boom"):
        client.execute()
