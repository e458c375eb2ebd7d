"""Outputs under separate guards do not merge their loads (MODEL.md §1,
``Kernel.output_guards``): the A100 convolution scan's compile-time switch
(``shared/data/a100`` README, "Guards") in ``stencils/convolution2d.py``.
Checked by hand counts of the loads a thread issues, and against the same
kernel with every load kept (``reload_repeated``), which a guarded
convolution must equal: within one output no address repeats."""

import dataclasses

import pytest

import warpspeed as ws
from stencils import convolution2d
from warpspeed.input.addresses import (
    guard_kept_loads,
    guarded_separately,
    repeated_loads,
    thread_accesses,
)
from warpspeed.input.expr import bind_all

A100 = ws.load_machine("A100")


def _issued_loads(kernel, block):
    bound = bind_all((a.forms for a in kernel.loads + kernel.stores), block)
    return len(thread_accesses(kernel, bound, block)[0])


@pytest.mark.parametrize("tile, block, guarded, merged", [
    # 4096 divisible by bx * tx and by * ty: unguarded, repeats merge
    ((1, 4), (32, 2, 1), False, 21 * 15),   # rows 2 yi + i: 0..20
    ((1, 2), (32, 1, 1), False, 16 * 15),   # rows yi + i: 0..15
    ((2, 1), (16, 1, 1), False, 30 * 15),   # columns 16 xi + j: 30 distinct
    # bx = 24 does not divide 4096: every output guarded
    ((1, 2), (24, 1, 1), True, 16 * 15),
    # by * ty = 6 does not divide 4096
    ((1, 2), (32, 3, 1), True, 15 * 18),    # rows 3 yi + i: 0..17
    # every tile of 3
    ((1, 3), (32, 1, 1), True, 17 * 15),    # rows yi + i: 0..16
    ((3, 1), (8, 1, 1), True, 31 * 15),     # columns 8 xi + j: 0..30
])
def test_guards_follow_the_scan_family_switch(tile, block, guarded, merged):
    k = convolution2d.kernel(tile_x=tile[0], tile_y=tile[1])
    outputs = tile[0] * tile[1]
    assert guarded_separately(k, block) is guarded
    assert (4096 % (block[0] * tile[0]) != 0 or 4096 % (block[1] * tile[1]) != 0) is guarded
    every = 225 * outputs
    assert _issued_loads(k, block) == (every if guarded else merged)
    # the same kernel without guards merges the hand count
    assert _issued_loads(convolution2d.kernel(tile_x=tile[0], tile_y=tile[1], guards="none"),
                         block) == merged
    assert _issued_loads(convolution2d.kernel(tile_x=tile[0], tile_y=tile[1], guards="each"),
                         block) == every
    assert repeated_loads(k, block) == (0 if guarded else every - merged)
    assert guard_kept_loads(k, block) == (every - merged if guarded else 0)


def test_a_guarded_convolution_predicts_as_one_that_reloads_everything():
    k = convolution2d.kernel(tile_y=3, shape=(512, 256))
    block = (64, 2, 1)
    assert guarded_separately(k, block)
    every = dataclasses.replace(k, reload_repeated=True, output_guards=False)
    for model in ("paper", "latency"):
        p, q = ws.predict(k, A100, block, model=model), ws.predict(every, A100, block, model=model)
        assert p.l1_cycles == pytest.approx(q.l1_cycles)
        assert p.footprint == q.footprint
        assert p.glups == pytest.approx(q.glups)
    unguarded = ws.predict(convolution2d.kernel(tile_y=3, shape=(512, 256), guards="none"),
                           A100, block)
    assert unguarded.l1_cycles < 0.6 * ws.predict(k, A100, block).l1_cycles


def test_guards_keep_merging_inside_one_output():
    # two outputs along y (fold 2), each reading A[x, y] twice: one load per
    # output remains under separate guards, one in all without them
    # rows of 64 elements; a view 128 wide over them, so that x + 64 in row r
    # is x in row r + 1 with every index inside its extent
    f = ws.Field("A", shape=(128, 66), itemsize=8, strides=(1, 64))
    g = ws.Field("B", shape=(64, 64), itemsize=8)
    x, y = ws.tidx, ws.tidy
    k = ws.Kernel(loads=[f[x, 2 * y + 1], f[x + 64, 2 * y], f[x + 1, 2 * y + 2],
                         f[x + 65, 2 * y + 1]],
                  stores=[g[x, 2 * y], g[x, 2 * y + 1]], domain=(32, 32), fold=(1, 2, 1),
                  output_guards=True)
    block = (32, 1, 1)
    # output 0: x + 64 (2y + 1) and x + 64 + 64 * 2y coincide -> 1 load;
    # output 1: x + 1 + 64 (2y + 2) and x + 65 + 64 (2y + 1) coincide -> 1 load
    assert _issued_loads(k, block) == 2
    assert _issued_loads(dataclasses.replace(k, output_guards=False), block) == 2


def test_guards_keep_apart_what_two_outputs_share():
    f = ws.Field("A", shape=(128, 66), itemsize=8, strides=(1, 64))  # as above
    g = ws.Field("B", shape=(64, 64), itemsize=8)
    x, y = ws.tidx, ws.tidy
    # output 0 reads rows 2y, 2y + 1; output 1 rows 2y + 1, 2y + 2: row 2y + 1 shared
    k = ws.Kernel(loads=[f[x, 2 * y], f[x, 2 * y + 1], f[x + 64, 2 * y], f[x, 2 * y + 2]],
                  stores=[g[x, 2 * y], g[x, 2 * y + 1]], domain=(32, 31), fold=(1, 2, 1))
    block = (32, 1, 1)
    assert _issued_loads(k, block) == 3
    assert _issued_loads(dataclasses.replace(k, output_guards=True), block) == 4
    # extents: 62 = 2 * 31 rows divide by * fold = 2 -> unguarded; 63 does not
    assert _issued_loads(dataclasses.replace(k, output_guards=(32, 62)), block) == 3
    assert _issued_loads(dataclasses.replace(k, output_guards=(32, 63)), block) == 4


@pytest.mark.parametrize("value, match", [
    ("yes", "output_guards must be True, False or the output extents"),
    ((0, 4), "output_guards must be True, False or the output extents"),
    ((4, 4, 4, 4), "at most 3 extents"),
])
def test_bad_guards_are_refused_by_name(value, match):
    with pytest.raises(ws.KernelError, match=match):
        dataclasses.replace(convolution2d.kernel(filter_size=3), output_guards=value)
    with pytest.raises(ws.KernelError, match="guards must be 'auto', 'each' or 'none'"):
        convolution2d.kernel(filter_size=3, guards="sometimes")


def test_guards_need_one_group_of_loads_per_output():
    f = ws.Field("A", shape=(64, 64), itemsize=8)
    x, y = ws.tidx, ws.tidy
    with pytest.raises(ws.KernelError, match="2 equal groups"):
        ws.Kernel(loads=[f[x, 2 * y], f[x, 2 * y + 1], f[x, 2 * y + 2]], stores=[f[x, 2 * y]],
                  domain=(32, 31), fold=(1, 2, 1), output_guards=True)


def _rank(blocks, folds, **kw):
    return ws.rank(lambda f: convolution2d.kernel(fold=f, **kw), A100, folds=folds,
                   blocks=blocks, jobs=1)


def test_the_rank_note_says_when_the_guard_prevents_merging():
    # fold (1, 3, 1) at by = 1: rows 0..16 would be 255 loads of 675; the
    # tile of 3 never divides 4096, so all 675 are issued
    note = next(n for n in _rank([(64, 1, 1)], [(1, 3, 1)]).notes if "loads per thread" in n)
    assert "issues all 675 loads per thread: 420 of them repeat" in note
    assert "guarded separately whenever block x fold does not divide (4096, 4096)" in note
    assert "no block merges them: the fold (1, 3, 1) does not divide" in note
    # fold (1, 2, 1) at a block 24 wide: guarded, and a dividing block exists
    note = next(n for n in _rank([(24, 1, 1)], [(1, 2, 1)]).notes if "loads per thread" in n)
    assert "issues all 450 loads per thread: 210 of them repeat" in note
    assert "a block whose extents times the fold divide those would merge them" in note
    # fold (1, 2, 1) at by = 1 divides: merged, and the note names the switch
    note = next(n for n in _rank([(64, 1, 1)], [(1, 2, 1)]).notes if "loads per thread" in n)
    assert "counts 210 of its 450 loads" in note and "not at this block" in note
    none = _rank([(64, 1, 1)], [(1, 3, 1)], guards="none").notes
    assert not any("guarded separately" in n for n in none)
