"""Occupancy, grid and waves (MODEL.md §3)."""

import dataclasses

import pytest

import warpspeed as ws
from warpspeed.volumes.launch import make_launch, occupancy, wave_sets

A = ws.Field("A", shape=(1000, 600, 600))


def _kernel(**kw):
    return ws.Kernel(loads=[A[ws.tidx, ws.tidy, ws.tidz]], stores=[], domain=(640, 512, 512), **kw)


def test_thread_limit_gives_two_blocks_of_1024():
    occ = occupancy(_kernel(), ws.load_machine("A100"), (1024, 1, 1))
    assert (occ.blocks_per_sm, occ.limited_by) == (2, "threads")


def test_register_limit_counts_whole_warps_in_units_of_256():
    # 40 registers * 32 lanes = 1280 per warp, already a multiple of 256;
    # a 256-thread block has 8 warps: 10240 registers; 65536 // 10240 = 6 blocks
    occ = occupancy(_kernel(registers=40), ws.load_machine("A100"), (256, 1, 1))
    assert (occ.by_registers, occ.blocks_per_sm, occ.limited_by) == (6, 6, "registers")
    # 33 registers round up to 40 per lane (1056 -> 1280 per warp)
    assert occupancy(_kernel(registers=33), ws.load_machine("A100"), (256, 1, 1)).by_registers == 6


def test_shared_memory_limit():
    occ = occupancy(_kernel(shared_memory=48 * 1024), ws.load_machine("A100"), (64, 1, 1))
    assert (occ.blocks_per_sm, occ.limited_by) == (3, "shared_memory")


def test_block_limit_for_tiny_blocks():
    occ = occupancy(_kernel(), ws.load_machine("A100"), (32, 1, 1))
    assert (occ.blocks_per_sm, occ.limited_by) == (32, "blocks")


def test_a_block_that_cannot_fit_is_an_error():
    with pytest.raises(ws.LaunchError, match="does not fit"):
        occupancy(_kernel(registers=255), ws.load_machine("A100"), (1024, 1, 1))
    with pytest.raises(ws.LaunchError, match="shared memory"):
        occupancy(_kernel(shared_memory=200 * 1024), ws.load_machine("A100"), (64, 1, 1))


def test_wave_shape_follows_the_model_formulas():
    # A100, (256,1,2), 32 registers: 4 blocks/SM, 432 blocks per wave
    launch = make_launch(_kernel(), ws.load_machine("A100"), (256, 1, 2))
    assert launch.grid == (3, 512, 256)
    assert launch.wave_blocks == 432
    # w0 = min(3, 432); w1 = min(512, ceil(432 / 2.5)); w2 = min(256, ceil(432 / 640))
    assert launch.wave_shape == (3, 173, 1)
    sets = wave_sets(launch)
    assert sets.current == ((0, 3), (339, 512), (128, 129))
    assert sets.x == ((0, 0), (339, 512), (128, 129))  # empty: whole rows per wave
    assert sets.y == ((0, 3), (166, 339), (128, 129))
    assert sets.z == ((0, 3), (0, 512), (127, 128))


def test_last_row_holding_under_ten_percent_of_a_block_is_skipped():
    k = dataclasses.replace(_kernel(), domain=(640, 513, 512))
    launch = make_launch(k, ws.load_machine("A100"), (32, 32, 1))
    assert launch.grid[1] == 17 and launch.row_skip == 1
    k2 = dataclasses.replace(_kernel(), domain=(640, 520, 512))
    assert make_launch(k2, ws.load_machine("A100"), (32, 32, 1)).row_skip == 0


def test_a_block_deeper_than_the_vendor_launches_is_refused_by_axis():
    """CUDA launches at most 64 threads along z (1024 along x and y); HIP on
    AMD 1024 along each axis (MODEL.md §3)."""
    from stencils import star3d

    k = star3d.kernel(radius=1, shape=(64, 64, 256))
    with pytest.raises(ws.LaunchError, match="at most 64 along z: use a smaller block z"):
        ws.predict(k, "A100", block=(1, 1, 128))
    assert ws.predict(k, "MI210", block=(1, 1, 128)).glups > 0
    assert ws.predict(k, "A100", block=(1, 1, 64)).glups > 0


def test_a_grid_beyond_the_vendor_limits_is_refused_and_never_ranked():
    """CUDA grids hold at most 65535 blocks along y and z; a ranking on a
    domain that long offers only blocks whose grid fits (MODEL.md §3)."""
    import math

    from stencils import star3d

    k = star3d.kernel(radius=1, shape=(32, 32, 200_002))
    with pytest.raises(ws.LaunchError, match="200002 blocks along z; NVIDIA GPUs launch at "
                                             "most 65535 along z"):
        ws.predict(k, "A100", block=(32, 8, 1))
    r = ws.rank(k, "A100", threads=[256], jobs=1)
    assert r.predictions
    for p in r.predictions:
        assert math.ceil(math.ceil(k.domain[2] / p.fold[2]) / p.block[2]) <= 65535


def test_an_amd_grid_of_more_than_2_to_the_32_threads_along_an_axis_is_refused():
    """The HSA dispatch packet holds each grid extent in work-items as a
    32-bit number (MODEL.md §3)."""
    from warpspeed.errors import LaunchError
    from warpspeed.volumes.launch import check_grid

    m = ws.load_machine("MI210")
    check_grid((2**22 - 1, 1, 1), (1024, 1, 1), m)  # 2^32 - 1024 threads: launchable
    with pytest.raises(LaunchError, match="4294967296 threads along x; AMD GPUs launch at most"):
        check_grid((2**22, 1, 1), (1024, 1, 1), m)


def test_a_kernel_larger_than_the_gpus_memory_is_refused_unless_the_file_has_no_size():
    """Two double fields of 4096^3 cells and a ghost layer take
    2 * 4098^3 * 8 B = 1025.5 GiB; an A100 has 40 (MODEL.md §3). A machine
    file without ``memory_gib`` is not checked."""
    from stencils import star3d

    k = star3d.kernel(radius=1, shape=(4096, 4096, 4096))
    need = 2 * 4098**3 * 8 / 2**30
    with pytest.raises(ws.LaunchError, match=f"fields take {need:,.1f} GiB, but A100 has 40 GiB"):
        ws.predict(k, "A100", block=(128, 2, 1))
    unsized = dataclasses.replace(ws.load_machine("A100"), memory_gib=None)
    assert ws.predict(k, unsized, block=(128, 2, 1)).glups > 0
    fits = star3d.kernel(radius=1, shape=(1024, 1024, 1024))  # 16 GiB
    assert ws.predict(fits, "A100", block=(128, 2, 1)).glups > 0


@pytest.mark.parametrize("bad", [(256.5, 1, 1), 256, "256,1,1", None, (256, 1), (0, 1, 1)])
def test_a_block_that_is_not_three_positive_integers_is_refused_never_rounded(bad):
    """(256.5, 1, 1) was predicted as (256, 1, 1); the block is read by the
    one grammar of ``warpspeed.input.triples``: values equal to an integer."""
    with pytest.raises(ws.LaunchError, match=r"^block must be (three|positive) integers"):
        ws.predict(_kernel(), "A100", bad)
    assert ws.predict(_kernel(), "A100", (256.0, 1, 1)).block == (256, 1, 1)
