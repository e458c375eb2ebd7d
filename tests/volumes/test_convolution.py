"""The 2-D convolution of stencils/convolution2d.py (folding strided by the
block size) and the loader of the A100 scan, against hand counts and a
brute-force enumeration of the grid (MODEL.md §1, §5)."""

from pathlib import Path

import numpy as np
import pytest

import warpspeed as ws
from stencils import convolution2d
from warpspeed.input.expr import bind_all
from warpspeed.model import block_stage
from warpspeed.validation.reference import dataset_dir
from warpspeed.volumes.launch import make_launch

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"


def _grid_values(kernel, block):
    """Every thread of the grid: the bound forms' values (brute force)."""
    launch = make_launch(kernel, ws.load_machine("A100"), block)
    bound = bind_all((a.forms for a in kernel.loads + kernel.stores), launch.block)
    g = launch.grid
    b = np.stack(np.meshgrid(*[np.arange(n) for n in g], indexing="ij"), 0).reshape(3, -1)
    t = np.stack(np.meshgrid(*[np.arange(n) for n in block], indexing="ij"), 0).reshape(3, -1)
    v = np.concatenate([np.repeat(b, t.shape[1], axis=1), np.tile(t, b.shape[1])])
    glob = v[:3] * np.array(block)[:, None] + v[3:]
    active = np.all(glob < np.array(kernel.domain)[:, None], axis=0)
    return bound, v, active


def test_access_counts_work_and_guard_of_a_folded_convolution():
    k = convolution2d.kernel(tile_x=2, tile_y=3)
    assert (len(k.loads), len(k.stores)) == (225 * 6, 6)
    assert k.fold == (2, 3, 1) and k.domain == (2048, 1366, 1)  # ceil(4096 / 3)
    assert k.fp_work == {"fma": 225 * 6} and k.precision == 32
    assert {f.name: (f.shape, f.itemsize) for f in k.fields} == {
        "input": ((4110, 4110), 4), "output": ((4096, 4096), 4)}
    d = convolution2d.kernel(filter_size=3, precision="double", fold=(1, 2, 1))
    assert d.fold == (1, 2, 1) and d.precision == 64 and d.fields[0].itemsize == 8
    assert convolution2d.kernel(precision=64).precision == 64


def test_outputs_are_strided_by_the_block_size_and_cover_the_image_once():
    # tile (2, 3) with block (16, 2): block b covers x in [32 b, 32 b + 32),
    # thread t writes t and t + 16; every output of 64 x 30 exactly once.
    k = convolution2d.kernel(filter_size=3, tile_x=2, tile_y=3, shape=(64, 30))
    bound, v, active = _grid_values(k, (16, 2, 1))
    xs = [bound[s.forms[0]].evaluate(v)[active] for s in k.stores]
    ys = [bound[s.forms[1]].evaluate(v)[active] for s in k.stores]
    written = np.concatenate(xs) + 64 * np.concatenate(ys)
    assert sorted(written.tolist()) == list(range(64 * 30))
    assert [(int(x[0]), int(y[0])) for x, y in zip(xs, ys)] == [
        (0, 0), (16, 0), (0, 2), (16, 2), (0, 4), (16, 4)]


def test_l1_and_block_volumes_of_a_small_convolution_by_hand():
    # 3x3 filter, 126 x 32 float outputs: the input row pitch is 128 floats
    # (512 B), so rows start on sectors. Block (32, 2): a warp is one row of
    # 32 outputs at x0 = 32 b, 128 B aligned; the last of 4 blocks along x
    # has 30 threads (x 96..125).
    k = convolution2d.kernel(filter_size=3, shape=(126, 32))
    fp = block_stage(k, ws.load_machine("A100"), (32, 2, 1)).footprint
    # L1: per filter row, tap j = 0 touches 4 sectors, j = 1, 2 five (full
    # warp); the partial warp's 30 floats from byte 384 + 4 j stay in 4
    # sectors for every j: per output row 3 * (3 * 14 + 12) = 162 sectors
    # for 126 updates.
    assert fp.l1_load == pytest.approx(162 * 32 / 126)
    # Block: 4 input rows of 34 floats from a 128 B boundary = 5 sectors
    # each for 64 updates; the partial block 4 rows of 32 floats (x 96..127)
    # = 4 sectors each for 60 updates.
    assert fp.l2_load_v1 == pytest.approx((3 * 20 + 16) * 32 / (3 * 64 + 60))


def test_bad_parameters_are_refused_with_a_clear_error():
    with pytest.raises(ws.KernelError, match="precision"):
        convolution2d.kernel(precision="half")
    with pytest.raises(ws.KernelError, match="2-D"):
        convolution2d.kernel(fold=(1, 1, 2))
    with pytest.raises(ws.KernelError, match="disagree"):
        convolution2d.kernel(tile_y=2, fold=(1, 4, 1))
    with pytest.raises(ws.KernelError, match="filter_size"):
        convolution2d.kernel(filter_size=0)
    for shape in ((10,), (64, 0), (8, 8, 8)):
        with pytest.raises(ws.KernelError, match="2 positive integers"):
            convolution2d.kernel(shape=shape)
    assert convolution2d.kernel(tile_y=2, fold=(1, 1, 1)).fold == (1, 2, 1)


def test_the_16_foldings_of_the_scan():
    assert len(set(convolution2d.FOLDS)) == 16
    assert {f[:2] for f in convolution2d.FOLDS} == {(a, b) for a in range(1, 5)
                                                    for b in range(1, 5)}


def test_missing_scan_names_where_the_data_come_from(tmp_path, monkeypatch):
    from warpspeed.validation.reference import ReferenceDataError, convolution_rows

    monkeypatch.setenv("WARPSPEED_SHARED", str(tmp_path))
    with pytest.raises(ReferenceDataError, match="convolution_15x15.csv.*WARPSPEED_SHARED"):
        convolution_rows()


@pytest.mark.skipif(not dataset_dir("a100").is_dir(),
                    reason="the A100 scan is neither in fits/data/a100 nor in shared/data")
def test_convolution_rows_read_the_scan_and_build_their_kernels():
    from warpspeed.validation.reference import CONVOLUTION, convolution_rows, kernel_for

    rows = convolution_rows()
    assert len(rows) > 400 and {r.dataset for r in rows} == {CONVOLUTION}
    assert {r.fold for r in rows} == set(convolution2d.FOLDS)
    assert all(r.block[2] == 1 and r.glups > 0 and r.dram_load is None for r in rows)
    first = next(r for r in rows if r.block == (16, 1, 1) and r.fold == (1, 1, 1))
    assert first.glups == pytest.approx(4096**2 / 3.871744e-3 / 1e9, rel=1e-4)
    k = kernel_for(next(r for r in rows if r.fold == (2, 3, 1)))
    assert k.fold == (2, 3, 1) and len(k.loads) == 225 * 6 and k.domain == (2048, 1366, 1)


def test_fits_script_predicts_each_row_as_predict_does():
    import importlib.util

    from warpspeed.validation.reference import CONVOLUTION, Row, kernel_for

    path = Path(__file__).resolve().parents[2] / "fits" / "convolution.py"
    spec = importlib.util.spec_from_file_location("fits_convolution", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    params = (("filter_size", 5), ("precision", "float"), ("shape", (512, 256)))
    rows = [Row(CONVOLUTION, "convolution2d", params, (32, 2, 1), (1, 2, 1), None, None, 1.0),
            Row(CONVOLUTION, "convolution2d", params, (16, 4, 1), (2, 1, 1), None, None, 1.0)]
    got = mod.predict_rows(rows, "latency")
    for r, p in zip(rows, got):
        q = ws.predict(kernel_for(r), "A100", r.block)
        assert (p.block, p.fold) == (r.block, r.fold) and p.glups == pytest.approx(q.glups)
