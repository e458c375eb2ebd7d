"""A kernel bound to one block once (warpspeed.input.binding, MODEL.md §1):
what the volume stages read equals the address functions' answers."""

import dataclasses

import numpy as np

from stencils import convolution2d
from warpspeed.input.addresses import address_classes, merge_repeated, thread_accesses
from warpspeed.input.binding import bind_kernel
from warpspeed.input.expr import bind_all

BLOCK = (32, 2, 1)


def kernel(reload: bool = False):
    """Folded 4 along y: at blocks 2 high, 21 * 15 of the 4 * 225 loads are
    distinct (tests/volumes/test_repeated_loads.py)."""
    k = convolution2d.kernel(tile_x=1, tile_y=4, guards="none")
    return dataclasses.replace(k, reload_repeated=reload)


def test_the_binding_holds_the_merged_and_issued_accesses():
    k = kernel()
    bk = bind_kernel(k, BLOCK)
    bound = bind_all([a.forms for a in k.loads + k.stores], BLOCK)
    assert bk.loads == merge_repeated(k.loads, bound) and len(bk.loads) == 21 * 15
    assert bk.stores == merge_repeated(k.stores, bound) and len(bk.stores) == 4
    assert (bk.issued_loads, bk.issued_stores) == thread_accesses(k, bound, BLOCK)
    assert bk.issued == bk.issued_loads + bk.issued_stores
    assert np.array_equal(bk.load_classes, address_classes(k.loads, bound))
    assert bk.load_classes.max() + 1 == 21 * 15


def test_reloaded_issues_every_access_and_keeps_the_merged_ones():
    k = kernel()
    bk = bind_kernel(k, BLOCK).reloaded()
    assert bk.issued_loads == k.loads and bk.issued_stores == k.stores
    assert len(bk.loads) == 21 * 15
    assert bind_kernel(kernel(reload=True), BLOCK).issued_loads == k.loads
