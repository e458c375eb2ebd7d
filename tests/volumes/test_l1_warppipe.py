"""The warp-pipe L1 count of the Hopper family (MODEL.md §4, "warppipe";
warpspeed/volumes/l1.py): data wavefronts and tag lookups per warp
instruction by hand, partial warps, stacked launches counted as alone, and a
Hopper prediction that reads it while the paper model keeps the half-warp
count."""

import numpy as np
import pytest

import warpspeed as ws
from warpspeed.input.expr import bind_all
from warpspeed.volumes.l1 import pass_wavefronts, pipe_cycles_of, pipe_cycles_per_warp_lup
from warpspeed.volumes.launch import make_launch
from warpspeed.volumes.sampling import sample, stack

PITCH = 4098
A100_SLOPE = 0.28


def _wavefronts(addresses, itemsize):
    a = np.asarray(addresses, dtype=np.int64)
    lanes = 32 if itemsize <= 4 else 128 // itemsize
    return int(pass_wavefronts(a.reshape(-1, lanes), np.ones((32 // lanes, lanes), bool),
                               itemsize).sum())


def test_data_wavefronts_by_hand():
    lane = np.arange(32)
    assert _wavefronts(4 * lane, 4) == 1              # 128 B of floats: one pass
    assert _wavefronts(8 * lane, 4) == 2              # every other word: 2-way banks
    assert _wavefronts(np.zeros(32, int), 4) == 1     # one word for all lanes
    # two rows of 16 floats, 4098 apart: the second row's words sit 2 banks
    # further, 14 banks hold a word of each row
    assert _wavefronts(4 * ((lane // 16) * PITCH + lane % 16), 4) == 2
    assert _wavefronts(8 * lane, 8) == 2              # 256 B of doubles: two half warps
    # doubles in 8 rows of 4: a half warp holds 4 rows at banks 4r..4r+7
    # (8196 words per row = 4 mod 32): banks 4..7 hold rows 0 and 1
    assert _wavefronts(8 * ((lane // 4) * PITCH + lane % 4), 8) == 4


def _sample(block, nx=4096, ny=64, machine="A100"):
    # rows of 4096 floats start on 128 B lines and in the same banks
    a = ws.Field("a", shape=(nx, ny), itemsize=4)
    b = ws.Field("b", shape=(nx, ny), itemsize=4)
    k = ws.Kernel(loads=[a[ws.tidx, ws.tidy]], stores=[b[ws.tidx, ws.tidy]],
                  domain=(nx, ny), precision=32)
    launch = make_launch(k, ws.load_machine(machine), block)
    bound = bind_all([k.loads[0].forms, k.stores[0].forms], launch.block)
    return sample(k, launch, k.loads + k.stores, bound)


def test_the_cost_per_further_line_is_a_parameter():
    # blocks 4 wide: a warp reads 8 rows of 16 B, 8 lines; rows 4096 floats
    # apart share their banks, so 8 wavefronts as well: the data stage binds
    # until a line costs more than one cycle
    s = _sample((4, 8, 1))
    assert pipe_cycles_per_warp_lup(s, A100_SLOPE) == pytest.approx(2 * 8.0)
    assert pipe_cycles_per_warp_lup(s, 1.0) == pytest.approx(2 * 8.0)
    assert pipe_cycles_per_warp_lup(s, 1.5) == pytest.approx(2 * (1 + 1.5 * 7))


def test_partial_warps_cost_a_whole_warp():
    # One load and one store of 32 aligned floats per warp: 1 cycle each per
    # 32 updates. A block of 16 threads issues half-empty warps: twice that.
    # Blocks 16 wide and 2 high fill a warp with two rows in the same banks
    # (2 wavefronts, 2 lines).
    for block, cycles in (((32, 1, 1), 2.0), ((16, 1, 1), 4.0), ((16, 2, 1), 4.0),
                          ((64, 4, 1), 2.0)):
        assert pipe_cycles_per_warp_lup(_sample(block), A100_SLOPE) == pytest.approx(cycles)


def test_stacked_launches_count_as_each_alone():
    samples = [_sample(b) for b in ((4, 8, 1), (32, 1, 1), (16, 2, 1), (2, 16, 1))]  # equal threads
    stacked, owner = stack(samples)
    together = pipe_cycles_of(stacked, owner, len(samples), 0.249)
    alone = [pipe_cycles_per_warp_lup(s, 0.249) for s in samples]
    assert together == pytest.approx(alone)


def _column(machine, model="latency"):
    # a column of doubles one thread wide: each warp instruction touches 32
    # lines of one sector, rows of 65 doubles apart (520 B: a half warp's
    # 16 rows fall in 32 distinct banks, one data wavefront per pass); one
    # load and one store per update
    f = ws.Field("f", shape=(65, 256, 256), itemsize=8)
    g = ws.Field("g", shape=(65, 256, 256), itemsize=8)
    k = ws.Kernel(loads=[f[ws.tidx, ws.tidy, ws.tidz]], stores=[g[ws.tidx, ws.tidy, ws.tidz]],
                  domain=(65, 256, 256))
    return ws.predict(k, machine, (1, 32, 8), model=model)


def test_hopper_counts_what_each_warp_issues_and_the_paper_model_keeps_half_warps():
    m = ws.load_machine("H200")
    assert m.l1_model == "warppipe"
    t = m.family.l1_tag_cycles_per_line
    # two instructions of 32 lines each: 1 + t * 31 tag cycles apiece, per 32 updates
    assert _column("H200").l1_cycles == pytest.approx(2 * (1 + t * 31))
    # the paper model counts half warps on every GPU, as the A100 does
    half = _column("A100").l1_cycles
    assert _column("H200", model="paper").l1_cycles == pytest.approx(half)
    assert half > 2 * (1 + t * 31)
