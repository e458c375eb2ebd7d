"""Every notebook in notebooks/ runs top to bottom, headless, without errors.

The notebooks are committed without outputs. Each is executed with nbclient
in a kernel of *this* interpreter: a kernelspec pointing at
``sys.executable`` is written to a temporary ``JUPYTER_PATH`` (so a user's
own ``python3`` kernelspec can never hijack the run), with
``WARPSPEED_HEADLESS=1`` (interactive sections run their update once instead
of showing widgets) and ``WARPSPEED_FIGURES`` set to a temporary directory
(the figures the notebooks save land there).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")

#: Minutes of notebooks: .ci/run runs them under its main Python only.
pytestmark = pytest.mark.slow

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
KERNEL = "warpspeed-test"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
#: Figures a notebook must write to $WARPSPEED_FIGURES. The validation
#: figures need the public reference data beside the repository: without
#: them the notebook says so and draws nothing.
FIGURES = {
    "layer_conditions.ipynb": ("layer_conditions_A100.png", "layer_conditions_V100.png",
                               "layer_conditions_H200.png"),
    "ranking.ipynb": ("ranking_star3d_A100.png", "breakdown_star3d_A100.png"),
    "validation.ipynb": (("validation_v100.png", "transfer_loo.png")
                         if (SHARED / "v100").is_dir() and (SHARED / "a100").is_dir() else ()),
}


@pytest.fixture(scope="module")
def kernel_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A JUPYTER_PATH with a kernelspec for the running interpreter."""
    root = tmp_path_factory.mktemp("jupyter")
    spec = root / "kernels" / KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "warpspeed tests",
        "language": "python",
    }))
    return root


@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("*.ipynb")), ids=lambda p: p.name)
def test_notebook_runs(
    path: Path, kernel_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    figures = tmp_path / "figures"
    monkeypatch.setenv("JUPYTER_PATH", str(kernel_dir))
    monkeypatch.setenv("WARPSPEED_HEADLESS", "1")
    monkeypatch.setenv("WARPSPEED_FIGURES", str(figures))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    nb = nbformat.read(path, as_version=4)
    assert all(
        not c.get("outputs") for c in nb.cells if c.cell_type == "code"
    ), f"{path.name} is committed with outputs; clear them"
    client = nbclient.NotebookClient(
        nb, timeout=900, kernel_name=KERNEL,
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()  # raises CellExecutionError on the first failing cell
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors
    for name in FIGURES.get(path.name, ()):
        assert (figures / name).is_file(), f"{path.name} did not write {name}"


def test_kernel_is_this_interpreter(kernel_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_PATH", str(kernel_dir))
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell("import sys; print(sys.executable)"))
    nbclient.NotebookClient(nb, timeout=60, kernel_name=KERNEL).execute()
    out = nb.cells[0].outputs[0].text.strip()
    assert Path(out).resolve() == Path(sys.executable).resolve()


def test_the_readmes_command_runs_a_notebook(tmp_path: Path) -> None:
    """Issue 46: the README did not say how to run the notebooks, and the
    set-up installs no nbconvert. Its command, with this interpreter's
    ``jupyter``, runs the notebook it names and writes its figures."""
    import os
    import re
    import shlex
    import subprocess

    readme = " ".join((NOTEBOOKS.parent / "README.md").read_text().split())
    found = re.search(r"`(WARPSPEED_HEADLESS=1 \.venv/bin/jupyter execute [^`]+)`", readme)
    assert found, "the README's notebook command is gone"
    env_part, command = found.group(1).split(" ", 1)
    words = shlex.split(command)
    jupyter = Path(sys.executable).parent / "jupyter"
    notebook = NOTEBOOKS.parent / words[-1]
    assert notebook.is_file() and jupyter.is_file()
    env = dict(os.environ, WARPSPEED_HEADLESS="1", WARPSPEED_FIGURES=str(tmp_path),
               MPLBACKEND="Agg", PYDEVD_DISABLE_FILE_VALIDATION="1")
    res = subprocess.run([str(jupyter), *words[1:-1], str(notebook)], env=env,
                         capture_output=True, text=True, timeout=900,
                         cwd=NOTEBOOKS.parent)
    assert res.returncode == 0, res.stderr[-2000:]
    for name in FIGURES.get(notebook.name, ()):
        assert (tmp_path / name).is_file()
