"""Where the reference data come from, named when they are missing, and the
conversion of the A100 convolution scan from its Kernel Tuner cache (issue
"no silent wrong answer", item 8)."""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.slow import slow
from warpspeed.validation.provenance import SOURCES, missing_message, source_of

ROOT = Path(__file__).resolve().parents[2]
_SPEC = importlib.util.spec_from_file_location("fits_convert_convolution",
                                               ROOT / "fits" / "convert_convolution.py")
assert _SPEC is not None and _SPEC.loader is not None
cc = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(cc)


@slow
def test_validate_without_data_names_every_repository_and_commit(tmp_path: Path) -> None:
    exe = Path(sys.executable).with_name("warpspeed")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "warpspeed.cli"]
    env = {**os.environ, "WARPSPEED_SHARED": str(tmp_path)}
    res = subprocess.run(cmd + ["validate", "--v100"], capture_output=True, text=True,
                         timeout=120, cwd=ROOT, env=env)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1
    for s in SOURCES:
        assert f"github.com/{s.repository}" in lines[0] and s.commit in lines[0]
    assert "python fits/convert_convolution.py" in lines[0]


def test_each_file_finds_its_source() -> None:
    assert source_of("/x/shared/data/a100/convolution_15x15.csv").commit == "8eeb99e"
    assert source_of("/x/shared/data/microbench/stream/a40.csv").repository == \
        "te42kyfo/gpu-benches"
    assert source_of("/x/elsewhere.csv") is None
    assert "ProjectPhysX/FluidX3D (commit 8986874)" in missing_message("d/lbm/fluidx3d_d3q19.csv")


def _entry(bx, by, tx, ty, times, **kw):
    return {"block_size_x": bx, "block_size_y": by, "tile_size_x": tx, "tile_size_y": ty,
            "use_shmem": 0, "read_only": 0, "time": sum(times) / len(times), "times": times,
            **kw}


def test_the_convolution_scan_is_rebuilt_from_a_kernel_tuner_cache(tmp_path: Path) -> None:
    cache = {"device_name": "A100", "cache": {
        "a": _entry(16, 1, 1, 1, [3.9, 3.871744, 3.869696]),
        "b": _entry(16, 1, 1, 1, [1.0, 1.0], use_shmem=1),       # shared memory: left out
        "c": _entry(32, 2, 1, 4, [2.0, 2.0], read_only=1),       # read-only loads: left out
        "d": {**_entry(32, 4, 1, 1, [1.0]), "time": "InvalidConfig"},  # did not run
        "e": _entry(32, 2, 2, 1, [2.5, 1.5, 2.0, 3.0]),
    }}
    path = tmp_path / "A100.json.gz"
    with gzip.open(path, "wt") as fh:
        json.dump(cache, fh)
    rows = cc.convert(cc.load_cache(path).values())
    assert [r[:4] for r in rows] == [(16, 1, 1, 1), (32, 2, 2, 1)]
    # median 3.871744 ms for 4096^2 outputs: 4.3332 GLup/s (the data file's first row)
    assert rows[0][4:6] == (3.871744, 3.869696)
    assert f"{rows[0][6]:.4f}" == "4.3332"
    assert rows[1][4] == 2.25  # the median of an even count
    text = cc.csv_text(rows)
    assert text.splitlines()[1] == cc.COLUMNS
    assert text.splitlines()[2] == "16,1,1,1,3.871744,3.869696,4.3332"


def test_ambiguous_rows_are_refused_with_the_parameter_that_differs(tmp_path: Path) -> None:
    entries = [_entry(16, 1, 1, 1, [1.0], use_padding=0), _entry(16, 1, 1, 1, [2.0], use_padding=1)]
    with pytest.raises(cc.ConversionError, match=r"\['use_padding'\]: add --where use_padding"):
        cc.convert(entries)
    assert len(cc.convert(entries, {"use_padding": 1})) == 1
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    with pytest.raises(cc.ConversionError, match="not a Kernel Tuner cache"):
        cc.load_cache(bad)
