"""Loads a thread repeats are loaded once (MODEL.md §1, counted by §4-§6):
once the block size is bound, accesses of one thread with equal addresses
count once at every level unless ``Kernel.reload_repeated``. Checked by
hand counts and against kernels written with the distinct loads only."""

import dataclasses

import pytest

import warpspeed as ws
from stencils import convolution2d
from warpspeed.input.addresses import merge_repeated, thread_accesses
from warpspeed.input.expr import bind_all
from warpspeed.model import block_stage

A100 = ws.load_machine("A100")


def _issued(kernel, block):
    bound = bind_all((a.forms for a in kernel.loads + kernel.stores), block)
    loads, stores = thread_accesses(kernel, bound, block)
    return len(loads), len(stores)


@pytest.mark.parametrize("tile, block, loads", [
    # tile_y = 4 at by = 2: rows 2 yi + i for yi < 4, i < 15 are 0..20
    ((1, 4), (32, 2, 1), 21 * 15),
    ((1, 4), (32, 1, 1), 18 * 15),    # rows yi + i: 0..17
    ((1, 4), (32, 16, 1), 4 * 225),   # rows 16 apart: nothing shared
    ((2, 1), (8, 4, 1), 23 * 15),     # columns 8 xi + j: 0..22
    ((4, 4), (16, 2, 1), 60 * 21),    # columns 16 xi + j: 60 distinct (15 < 16)
    ((3, 2), (16, 15, 1), 45 * 30),  # rows 15 yi + i: 0..29, none shared
    ((3, 2), (16, 14, 1), 45 * 29),  # rows 14 yi + i: 0..28, row 14 shared
])
def test_distinct_loads_per_thread_by_hand(tile, block, loads):
    # unguarded body: every repeat merges (the guards: tests/volumes/test_output_guards.py)
    k = convolution2d.kernel(tile_x=tile[0], tile_y=tile[1], guards="none")
    outputs = tile[0] * tile[1]
    assert _issued(k, block) == (loads, outputs)
    assert _issued(dataclasses.replace(k, reload_repeated=True), block) == (225 * outputs, outputs)


def _distinct_by_hand(by, ty, shape):
    """The convolution folded ty along y for block height ``by`` only,
    written with its distinct input rows: ``y0 + r`` for ``r < by (ty - 1) + 15``."""
    nx, ny = shape
    inp = ws.Field("input", shape=(nx + 14, ny + 14), itemsize=4)
    out = ws.Field("output", shape=shape, itemsize=4)
    x = ws.tidx
    y0 = ws.blockIdx.y * (by * ty) + ws.threadIdx.y
    rows = by * (ty - 1) + 15
    return ws.Kernel(
        loads=[inp[x + j, y0 + r] for r in range(rows) for j in range(15)],
        stores=[out[x, y0 + by * yi] for yi in range(ty)],
        domain=(nx, -(-ny // ty)), fold=(1, ty, 1), fp_ops={"fma": 225 * ty}, precision=32,
    )


@pytest.mark.parametrize("by", [1, 2, 4])
def test_merged_convolution_predicts_as_the_kernel_of_its_distinct_loads(by):
    shape = (512, 256)
    k = convolution2d.kernel(tile_y=4, shape=shape)
    h = _distinct_by_hand(by, 4, shape)
    block = (64, by, 1)
    for model in ("paper", "latency"):
        p, q = ws.predict(k, A100, block, model=model), ws.predict(h, A100, block, model=model)
        assert p.l1_cycles == pytest.approx(q.l1_cycles)
        assert p.footprint == q.footprint
        assert p.wave == q.wave
        assert p.glups == pytest.approx(q.glups)


def test_repeated_loads_cost_l1_sectors_again_when_reloaded():
    # Input pitch 114 + 14 = 128 floats (512 B): every row starts on a
    # sector, so an instruction's sectors per warp depend on its column j
    # only. tile_y = 4 at by = 2 issues 60 row loads per column when
    # reloading, 21 when merged; the block footprint (a union) is the same.
    k = convolution2d.kernel(tile_y=4, shape=(114, 64), guards="none")
    reload = dataclasses.replace(k, reload_repeated=True)
    merged, every = block_stage(k, A100, (32, 2, 1)), block_stage(reload, A100, (32, 2, 1))
    assert every.footprint.l1_load == pytest.approx(merged.footprint.l1_load * 60 / 21)
    assert every.footprint.l2_load_v1 == pytest.approx(merged.footprint.l2_load_v1)
    assert every.l1_cycles > 2.5 * merged.l1_cycles


def test_linear_offsets_that_coincide_are_one_address():
    # rows 5 elements apart in a 10-wide view: (x + 5, y) and (x, y + 1) are one element,
    # both inside the field's extents
    f = ws.Field("A", shape=(10, 10), itemsize=8, strides=(1, 5))
    x, y = ws.tidx, ws.tidy
    k = ws.Kernel(loads=[f[x + 5, y], f[x, y + 1], f[x + 1, y]], stores=[f[x, y]],
                  domain=(4, 8))
    bound = bind_all((a.forms for a in k.loads), (8, 8, 1))
    assert [str(a) for a in merge_repeated(k.loads, bound)] == [str(k.loads[0]), str(k.loads[2])]


def test_kernels_without_repeats_predict_as_before():
    from stencils.star3d_by_hand import kernel as star

    k = star(radius=2, shape=(64, 32, 32), fold=(1, 2, 1))
    p = ws.predict(k, A100, (32, 4, 2))
    q = ws.predict(dataclasses.replace(k, reload_repeated=True), A100, (32, 4, 2))
    assert p == q


def test_reload_flag_must_be_a_bool():
    with pytest.raises(ws.KernelError, match="reload_repeated"):
        dataclasses.replace(convolution2d.kernel(filter_size=3), reload_repeated="yes")


def test_a_ranking_whose_best_merges_loads_says_so():
    # fold (1, 2, 1) at by = 1: rows i and 1 + i for i < 15 share rows 1..14,
    # 14 * 15 = 210 of the 450 loads repeat an address
    def rank(**kw):
        return ws.rank(lambda f: convolution2d.kernel(fold=f, **kw), A100, folds=[(1, 2, 1)],
                       blocks=[(64, 1, 1)], jobs=1)

    merged = rank()
    note = next(n for n in merged.notes if "repeat an address" in n)
    assert "counts 210 of its 450 loads" in note and "reload_repeated=True" in note
    assert not any("repeat an address" in n for n in rank(reload_repeated=True).notes)
    unfolded = ws.rank(lambda f: convolution2d.kernel(fold=f), A100, folds=[(1, 1, 1)],
                       blocks=[(64, 1, 1)], jobs=1)
    assert not any("repeat an address" in n for n in unfolded.notes)


def test_block_independent_merges_are_the_merges_at_every_block():
    # merge_repeated keeps the merge of accesses whose forms are functions
    # of the global coordinates alone: it must be the merge computed afresh
    # at any other block (A[x + 64, y] and A[x, y + 1] coincide on a
    # 64-wide field at every block)
    from warpspeed.input.addresses import _merge, merge_repeated
    from warpspeed.input.expr import bind_all, global_terms

    x, y = ws.tidx, ws.tidy
    A = ws.Field("A", shape=(64, 40))
    loads = (A[x, y + 1], A[x + 64, y], A[x + 1, y], A[x, y + 1])
    assert all(global_terms(f) is not None for a in loads for f in a.forms)
    first = merge_repeated(loads, bind_all((a.forms for a in loads), (32, 2, 1)))
    assert first == (loads[0], loads[2])
    for block in [(8, 8, 1), (1, 16, 2), (64, 1, 1)]:
        bound = bind_all((a.forms for a in loads), block)
        assert merge_repeated(loads, bound) == _merge(loads, bound) == first
