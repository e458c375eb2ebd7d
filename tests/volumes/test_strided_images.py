"""Wave images of folds strided by the block size without isl
(warpspeed/volumes/strided_images.py, MODEL.md §6) against isl's exact images."""

import dataclasses

import pytest

import warpspeed as ws
from stencils import convolution2d
from warpspeed.input.expr import bind_all
from warpspeed.volumes.launch import make_launch, wave_sets
from warpspeed.volumes.strided_images import strided_volumes
from warpspeed.volumes.waves import wave_volumes

A100 = ws.load_machine("A100")


def _both(kernel, block, address):
    launch = make_launch(kernel, A100, block)
    bound = bind_all((a.forms for a in kernel.loads + kernel.stores), launch.block)
    fast = wave_volumes(kernel, launch, bound, address=address)
    exact = wave_volumes(kernel, launch, bound, method="isl", address=address)
    return fast, exact, launch, bound


@pytest.mark.parametrize("address", ["paper", "linear"])
@pytest.mark.parametrize("fs, tile, shape, block, precision", [
    (3, (2, 3), (100, 60), (16, 4, 1), "float"),     # partial blocks along x and y
    (3, (2, 3), (100, 60), (8, 2, 1), "float"),
    (5, (3, 2), (4096, 4096), (48, 2, 1), "float"),  # earlier x and y sets
    (3, (4, 1), (250, 70), (32, 8, 1), "float"),
    (3, (1, 4), (64, 4096), (16, 1, 1), "double"),   # overlapping rows across yi
    (3, (2, 2), (300, 200), (8, 2, 1), "double"),
])
def test_strided_images_count_as_isl(fs, tile, shape, block, precision, address):
    k = convolution2d.kernel(filter_size=fs, tile_x=tile[0], tile_y=tile[1], shape=shape,
                             precision=precision, reload_repeated=True)
    fast, exact, launch, bound = _both(k, block, address)
    assert dataclasses.replace(exact, enumerated=0) == fast
    assert fast.enumerated == 0
    sets = wave_sets(launch)
    boxes = [sets.current, sets.x, sets.y, sets.z]
    assert strided_volumes(list(k.loads), bound, launch.block, k.domain, boxes,
                           address) is not None  # the direct route was taken


@pytest.mark.parametrize("address", ["paper", "linear"])
@pytest.mark.parametrize("fs, tile, shape, block, precision", [
    (3, (3, 1), (300, 40), (12, 3, 1), "float"),     # a block moves 144 B: 2 classes
    (3, (4, 4), (256, 256), (1, 16, 1), "float"),    # 16 B per block: 2 classes
    (3, (3, 2), (100, 60), (1, 8, 1), "float"),      # 12 B per block: 8 classes, partial
    (5, (4, 4), (120, 90), (1, 32, 1), "double"),    # 32 B per block: whole sectors
    (3, (2, 1), (70, 30), (3, 4, 1), "float"),       # 24 B per block: 4 classes, partial
])
def test_blocks_that_shift_by_part_of_a_sector_count_as_isl(fs, tile, shape, block, precision,
                                                             address):
    """Blocks whose shift is no whole number of sectors are taken in residue
    classes of whole-sector shifts, and count exactly as isl does."""
    k = convolution2d.kernel(filter_size=fs, tile_x=tile[0], tile_y=tile[1], shape=shape,
                             precision=precision, reload_repeated=True)
    fast, exact, launch, bound = _both(k, block, address)
    assert dataclasses.replace(exact, enumerated=0) == fast
    sets = wave_sets(launch)
    boxes = [sets.current, sets.x, sets.y, sets.z]
    assert strided_volumes(list(k.loads), bound, launch.block, k.domain, boxes,
                           address) is not None  # the direct route was taken
