"""The L1 cost of what a warp issues (fits/l1_pipe.py, issue 21 part 2; an
experiment beside the half-warp count of warpspeed/volumes/l1.py):
data wavefronts and tag lookups per warp instruction by hand, partial warps,
and the public A100 stride benchmark's wavefront counter."""

from pathlib import Path

import numpy as np
import pytest

import warpspeed as ws
from tests.fits.test_fits_scripts import script
from warpspeed.input.expr import bind_all
from warpspeed.volumes.launch import make_launch
from warpspeed.volumes.sampling import sample

PIPE = script("l1_pipe")
TAG_CYCLES_PER_LINE = PIPE.TAG_CYCLES_PER_LINE
l1_pipe_cycles_per_warp_lup = PIPE.l1_pipe_cycles_per_warp_lup
pass_wavefronts = PIPE.pass_wavefronts
warp_pipe_cycles = PIPE.warp_pipe_cycles

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
PITCH = 4098


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


def test_a_warp_costs_its_wavefronts_or_its_lines():
    assert warp_pipe_cycles(np.array(1), np.array(1)) == 1
    assert warp_pipe_cycles(np.array(2), np.array(2)) == 2
    assert warp_pipe_cycles(np.array(32), np.array(2)) == pytest.approx(
        1 + 31 * TAG_CYCLES_PER_LINE)


def _copy2d(block, nx=4096, ny=64, **kw):
    # rows of 4096 floats start on 128 B lines and in the same banks
    a = ws.Field("a", shape=(nx, ny), itemsize=4)
    b = ws.Field("b", shape=(nx, ny), itemsize=4)
    k = ws.Kernel(loads=[a[ws.tidx, ws.tidy]], stores=[b[ws.tidx, ws.tidy]],
                  domain=(nx, ny), precision=32)
    launch = make_launch(k, ws.load_machine("A100"), block)
    bound = bind_all([k.loads[0].forms, k.stores[0].forms], launch.block)
    return l1_pipe_cycles_per_warp_lup(sample(k, launch, k.loads + k.stores, bound), **kw)


def test_the_cost_per_further_line_is_a_parameter():
    # blocks 4 wide: a warp reads 8 rows of 16 B, 8 lines; rows 4096 floats
    # apart share their banks, so 8 wavefronts as well: the data stage binds
    # until a line costs more than one cycle
    assert _copy2d((4, 8, 1)) == pytest.approx(2 * 8.0)
    assert _copy2d((4, 8, 1), tag_cycles=1.0) == pytest.approx(2 * 8.0)
    assert _copy2d((4, 8, 1), tag_cycles=1.5) == pytest.approx(2 * (1 + 1.5 * 7))


def test_partial_warps_cost_a_whole_warp():
    # One load and one store of 32 aligned floats per warp: 1 cycle each per
    # 32 updates. A block of 16 threads issues half-empty warps: twice that.
    # Blocks 16 wide and 2 high fill a warp with two rows in the same banks
    # (2 wavefronts, 2 lines).
    assert _copy2d((32, 1, 1)) == pytest.approx(2.0)
    assert _copy2d((16, 1, 1)) == pytest.approx(4.0)
    assert _copy2d((16, 2, 1)) == pytest.approx(4.0)
    assert _copy2d((64, 4, 1)) == pytest.approx(2.0)


@pytest.mark.skipif(not (SHARED / "microbench" / "l1_strides").is_dir(),
                    reason="shared/data/microbench not beside the repo")
def test_wavefronts_match_the_a100_counter_and_the_tag_slope_its_fit():
    mod = PIPE
    data = mod.rows("a100")
    assert len(data) > 100
    assert all(r["wf"] == round(r["lsu"]) for r in data)
    assert mod.fit_slope(data) == pytest.approx(TAG_CYCLES_PER_LINE, abs=0.01)
