"""L1 cycles (MODEL.md §4): the paper's examples and hand-computed half warps."""

import numpy as np
import pytest

import warpspeed as ws
from warpspeed.volumes.l1 import halfwarp_cycles


def _one(addresses, active=None):
    a = np.array(addresses, dtype=np.int64).reshape(1, 16)
    act = np.ones_like(a, dtype=bool) if active is None else np.array(active).reshape(1, 16)
    return int(halfwarp_cycles(a, act)[0])


def _strided(stride: int) -> ws.Kernel:
    f = ws.Field("A", shape=(1 << 22,), itemsize=8)
    return ws.Kernel(loads=[f[stride * ws.tidx]], stores=[], domain=(1 << 16,))


@pytest.mark.parametrize("stride, cycles", [(1, 1), (2, 2), (16, 16)])
def test_paper_examples_cost_one_two_and_sixteen_cycles_per_half_warp(stride, cycles):
    p = ws.predict(_strided(stride), "A100", (256, 1, 1))
    # l1_cycles is per warp: two half warps.
    assert p.l1_cycles == pytest.approx(2 * cycles)


def test_unit_stride_half_warp_costs_one_cycle():
    assert _one([8 * i for i in range(16)]) == 1


def test_sixteen_words_in_one_bank_cost_sixteen_cycles():
    # 128 B apart: all in bank 0, 16 distinct words, also 2 KiB span -> 2 regions
    assert _one([128 * i for i in range(16)]) == 16


def test_broadcast_of_one_word_costs_one_cycle():
    assert _one([64] * 16) == 1


def test_two_floats_in_one_word_do_not_conflict():
    # 4 B items: 16 threads touch 8 distinct 8 B words in 8 banks
    assert _one([4 * i for i in range(16)]) == 1


def test_one_kib_rule_charges_each_region():
    # banks all distinct, but the second half lies in another 1 KiB region
    addrs = [8 * i if i < 8 else 1024 + 8 * i for i in range(16)]
    assert _one(addrs) == 2


def test_inactive_lanes_are_ignored():
    addrs = [128 * i for i in range(16)]
    active = [i < 4 for i in range(16)]
    assert _one(addrs, active) == 4
    assert _one(addrs, [False] * 16) == 0


def test_folded_kernel_reports_cycles_per_lattice_update():
    f = ws.Field("A", shape=(1 << 20,), itemsize=8)
    g = ws.Field("B", shape=(1 << 20,), itemsize=8)
    plain = ws.Kernel(loads=[f[ws.tidx]], stores=[g[ws.tidx]], domain=(1 << 14,))
    folded = ws.Kernel(
        loads=[f[ws.tidx], f[ws.tidx + (1 << 14)]],
        stores=[g[ws.tidx], g[ws.tidx + (1 << 14)]],
        domain=(1 << 14,),
        fold=(2, 1, 1),
    )
    a = ws.predict(plain, "A100", (128, 1, 1))
    b = ws.predict(folded, "A100", (128, 1, 1))
    assert a.l1_cycles == pytest.approx(4.0)
    assert b.l1_cycles == pytest.approx(4.0)
