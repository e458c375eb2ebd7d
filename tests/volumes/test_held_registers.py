"""Registers held by merged loads, and the AMD compiler's budget
(MODEL.md §15, "Merged loads and registers"; warpspeed.volumes.held)."""

from __future__ import annotations

import pytest

import warpspeed as ws
from stencils import convolution2d
from warpspeed.input.expr import bind_all
from warpspeed.volumes.held import NOTE_START, held_registers, register_budget


def lockstep_live(by: int, tx: int, ty: int, taps: int = 15) -> int:
    """Brute force, from the loop nest rather than from addresses: the
    convolution's tile loops inside its tap loops (``for i, j: for yi, xi``);
    a value (input row, column, x tile) stays alive from its first read to
    its last; the most alive at once."""
    steps = [(yi * by + i, j, xi) for i in range(taps) for j in range(taps)
             for yi in range(ty) for xi in range(tx)]
    first: dict[tuple[int, int, int], int] = {}
    last: dict[tuple[int, int, int], int] = {}
    for t, v in enumerate(steps):
        first.setdefault(v, t)
        last[v] = t
    return max(sum(first[v] <= t < last[v] for v in first) for t in range(len(steps)))


def held(tx: int, ty: int, by: int, bx: int = 32, **kw: object) -> int:
    k = convolution2d.kernel(tile_x=tx, tile_y=ty, **kw)  # type: ignore[arg-type]
    return held_registers(k, bind_all((a.forms for a in k.loads + k.stores), (bx, by, 1)))


@pytest.mark.parametrize(("tx", "ty", "by"), [(1, 2, 1), (2, 2, 4), (1, 4, 8), (4, 2, 2),
                                              (2, 4, 4), (4, 4, 1)])
def test_held_registers_match_the_loop_nest(tx, ty, by):
    assert held(tx, ty, by) == lockstep_live(by, tx, ty) + tx * ty


def test_held_registers_by_hand():
    """Two outputs 8 rows apart: output 1 reads rows 8..14 of output 0's
    window at taps i = 0..6, output 0 at i = 8..14; at tap row 7 all 7 x 15
    are alive, plus the two accumulators."""
    assert held(1, 2, 8) == 7 * 15 + 2
    assert held(1, 4, 16) == 0  # rows 16 apart: nothing repeats
    assert held(1, 2, 8, precision="double") == 2 * (7 * 15 + 2)  # two words each


def test_budget_is_the_vgpr_file_over_the_default_work_group():
    """VGPRs per CU (RDNA: per WGP of two CUs) over 1024 threads."""
    assert register_budget(ws.load_machine("W7800")) == 98304 * 2 // 1024  # 192
    assert register_budget(ws.load_machine("RX6900XT")) == 65536 * 2 // 1024  # 128
    assert register_budget(ws.load_machine("MI250X-GCD")) == 131072 // 1024  # 128
    assert register_budget(ws.load_machine("MI100")) == 2 * 65536 // 1024  # AGPRs too
    assert register_budget(ws.load_machine("A100")) is None


def test_over_the_budget_is_predicted_as_reloaded_and_says_so():
    m = ws.load_machine("W7800")
    k = convolution2d.kernel(tile_x=1, tile_y=4)
    over = ws.predict(k, m, block=(32, 8, 1))  # 7 x 15 x 3 + 4 = 319 > 192
    again = ws.predict(convolution2d.kernel(tile_x=1, tile_y=4, reload_repeated=True), m,
                       block=(32, 8, 1))
    assert over.glups == again.glups
    assert any(n.startswith(NOTE_START) and "319 VGPRs" in n for n in over.notes)
    under = ws.predict(k, m, block=(32, 2, 1))  # 13 x 15 / ... = 94 <= 192
    assert not any(n.startswith(NOTE_START) for n in under.notes)
    assert under.glups > again.glups
    nvidia = ws.predict(k, "A100", block=(32, 8, 1))
    assert not any(n.startswith(NOTE_START) for n in nvidia.notes)


def test_rank_carries_the_note_and_no_merge_claim():
    k = convolution2d.kernel(tile_x=1, tile_y=4)
    r = ws.rank(k, "W7800", blocks=[(32, 8, 1)], jobs=1)
    best = r.predictions[0]
    assert any(n.startswith(NOTE_START) for n in best.notes)
    assert not any("repeat an address" in n for n in r.notes)


def _star(registers: int) -> ws.Kernel:
    A = ws.Field("A", shape=(258, 258, 258))
    B = ws.Field("B", shape=(258, 258, 258))
    x, y, z = ws.tidx + 1, ws.tidy + 1, ws.tidz + 1
    return ws.Kernel(loads=[A[x + d, y, z] for d in (-1, 0, 1)], stores=[B[x, y, z]],
                     domain=(256, 256, 256), registers=registers)


def test_an_rdna_block_that_needs_two_cus_launches_and_says_so():
    """WGP mode: 1024 threads are 32 wave32s over the four SIMDs of two CUs,
    8 per SIMD: up to 1536 / 8 = 192 VGPRs each. The CU alone (16 waves of
    120 VGPRs: 1536 // 120 = 12 per SIMD, 24 per CU) cannot hold the block."""
    p = ws.predict(_star(120), "W7800", block=(1024, 1, 1))
    assert p.blocks_per_sm == 1  # threads bind too: 32 wavefronts per CU
    assert any("two CUs" in n for n in p.notes)
    small = ws.predict(_star(120), "W7800", block=(256, 1, 1))  # 8 waves: the CU holds 3
    assert small.blocks_per_sm == 3 and not any("two CUs" in n for n in small.notes)
    with pytest.raises(ws.LaunchError, match="does not fit"):
        ws.predict(_star(120), "A100", block=(1024, 1, 1))  # 65536 / 1024 = 64 per thread


def test_amd_registers_are_capped_where_the_compiler_caps_them():
    """A kernel said to need 200 registers runs with the 128 VGPRs the compiler
    leaves at its 1024-thread bound on CDNA2 (it spills the rest)."""
    p = ws.predict(_star(200), "MI250X-GCD", block=(256, 1, 1))
    same = ws.predict(_star(128), "MI250X-GCD", block=(256, 1, 1))
    assert p.blocks_per_sm == same.blocks_per_sm == 4  # 512 // 128 waves per SIMD
    assert any("exceed the 128 VGPRs" in n for n in p.notes)
    assert not any("exceed" in n for n in same.notes)
