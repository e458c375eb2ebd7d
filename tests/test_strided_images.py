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


def test_blocks_that_shift_by_part_of_a_sector_go_to_isl():
    # block x 12, tile 3: a block moves 144 B, not whole sectors
    k = convolution2d.kernel(filter_size=3, tile_x=3, shape=(300, 40))
    fast, exact, launch, bound = _both(k, (12, 3, 1), "paper")
    assert dataclasses.replace(exact, enumerated=0) == dataclasses.replace(fast, enumerated=0)
    sets = wave_sets(launch)
    boxes = [sets.current, sets.x, sets.y, sets.z]
    assert strided_volumes(list(k.loads), bound, launch.block, k.domain, boxes) is None
