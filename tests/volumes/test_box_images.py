"""The wave images of a field's accesses at once (warpspeed.volumes.box_images)
against the per-access images of warpspeed.volumes.waves, and the product
cover of few boxes against the slices (MODEL.md §6)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import warpspeed as ws
from warpspeed.input.expr import bind_all
from warpspeed.volumes.box_images import field_images
from warpspeed.volumes.counting import _cover, _cover_product
from warpspeed.volumes.direct_images import _image, global_box
from warpspeed.volumes.launch import make_launch, wave_sets

x, y, z = ws.tidx, ws.tidy, ws.tidz


def per_access(accs, bound, block, gboxes, address):
    """The boxes of direct_images._image, one access at a time (None: not all single boxes)."""
    out = []
    for g in gboxes:
        boxes = []
        if g is not None:
            for a in accs:
                img = _image(a, bound, block, g, address)
                if img is None or len(img) != 1 or any(st != 1 for _, _, st in img[0]):
                    return None
                boxes.append([[lo, hi] for lo, hi, _ in img[0]])
        out.append(sorted(boxes))
    return out


@settings(max_examples=25, deadline=None)
@given(
    offsets=st.lists(st.tuples(st.integers(-3, 3), st.integers(-3, 3), st.integers(-3, 3)),
                     min_size=1, max_size=8),
    step=st.sampled_from([1, 2, 4, 9]),
    itemsize=st.sampled_from([4, 8]),
    block=st.sampled_from([(32, 2, 1), (64, 1, 2), (8, 4, 4), (1, 32, 1)]),
    address=st.sampled_from(["paper", "linear"]),
)
def test_field_images_are_the_per_access_images(offsets, step, itemsize, block, address):
    f = ws.Field("A", shape=(80, 40, 40), itemsize=itemsize)
    loads = [f[step * x + 3 + a, y + 3 + b, z + 3 + c] for a, b, c in offsets]
    k = ws.Kernel(loads=loads, stores=[ws.Field("B", shape=(80, 40, 40))[x, y, z]],
                  domain=(60 // step, 30, 30))
    launch = make_launch(k, ws.load_machine("A100"), block)
    bound = bind_all([a.forms for a in loads], launch.block)
    sets = wave_sets(launch)
    gboxes = [global_box(b, launch.block, k.domain) for b in (sets.current, sets.x, sets.y,
                                                              sets.z)]
    fast = field_images(loads, bound, launch.block, gboxes, address)
    slow = per_access(loads, bound, launch.block, gboxes, address)
    if fast is None:
        return  # outside the case: the per-access route counts it
    assert slow is not None
    assert [sorted(b.tolist()) for b in fast] == slow


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_product_cover_is_the_slice_cover(dims):
    rng = np.random.default_rng(dims)
    shape = tuple(int(v) for v in rng.integers(2, 9, size=dims))
    lo = rng.integers(0, np.array(shape), size=(12, dims))
    hi = lo + rng.integers(1, 4, size=(12, dims))
    cells = np.stack([lo, np.minimum(hi, shape)], axis=-1)
    expected = np.zeros(shape, dtype=bool)
    for b in cells.tolist():
        expected[tuple(slice(a, e) for a, e in b)] = True
    assert np.array_equal(_cover_product(cells, shape), expected)
    assert np.array_equal(_cover(cells, shape), expected)
