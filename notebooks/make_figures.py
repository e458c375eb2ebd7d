"""Render the committed figures of notebooks/figures/ (run by hand, not by
the tests): executes ``layer_conditions.ipynb`` and ``ranking.ipynb``
headless with ``WARPSPEED_FIGURES`` pointing at a temporary directory and
copies the main figures here.

Usage: ``python notebooks/make_figures.py`` (about a minute).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent
OUT = HERE / "figures"
FIGURES = {
    "layer_conditions.ipynb": ("layer_conditions_A100.png", "layer_conditions_V100.png"),
    "ranking.ipynb": (
        "ranking_star3d_A100.png",
        "breakdown_star3d_A100.png",
        "ranking_allen_cahn_d3q15_A100.png",
    ),
    "validation.ipynb": ("validation_v100.png", "transfer_loo.png"),
}
KERNEL = "warpspeed-figures"


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="warpspeed-figures-") as tmp:
        spec = Path(tmp) / "jupyter" / "kernels" / KERNEL
        spec.mkdir(parents=True)
        (spec / "kernel.json").write_text(json.dumps({
            "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "warpspeed figures",
            "language": "python",
        }))
        rendered = Path(tmp) / "png"
        os.environ.update({
            "JUPYTER_PATH": str(Path(tmp) / "jupyter"),
            "WARPSPEED_HEADLESS": "1",
            "WARPSPEED_FIGURES": str(rendered),
            "MPLBACKEND": "Agg",
        })
        OUT.mkdir(exist_ok=True)
        for name, pngs in FIGURES.items():
            nb = nbformat.read(HERE / name, as_version=4)
            NotebookClient(nb, timeout=600, kernel_name=KERNEL,
                           resources={"metadata": {"path": str(HERE)}}).execute()
            for png in pngs:
                shutil.copyfile(rendered / png, OUT / png)
                print(f"wrote {(OUT / png).relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
